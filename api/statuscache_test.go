package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/status"
)

// docSupervisor answers Status with a document a test changes.
type docSupervisor struct {
	fakeSupervisor
	mu  sync.Mutex
	doc status.Document
}

func (d *docSupervisor) Status() status.Document {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.doc // its slices are the test's own, as a supervisor's may be
}

func (d *docSupervisor) change(f func(*status.Document)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.doc)
}

// GET /v1/status encodes a document only when it differs from the last one served:
// two reads of the same document encode it once; a change, even one made in place
// in a slice the previous document shared, shows in the next read; tend's own
// process is in every answer, which is byte for byte what encoding the whole
// document gives.
func TestStatusEncodedOncePerChange(t *testing.T) {
	pid := 4242
	sv := &docSupervisor{doc: status.Document{
		Instance: "cache", State: status.InstanceRunning,
		Ready: status.NewCondition(true, status.ReasonContainersReady, "", time.Now()),
		Containers: []status.Container{
			{Name: "web", State: status.Running, Pid: &pid, WaitingFor: []string{}, Usage: status.Usage{MemoryBytes: 1 << 20}},
			{Name: "db", State: status.Running, WaitingFor: []string{}},
		},
	}}
	sock := filepath.Join(t.TempDir(), "tend.sock")
	a, err := Serve(sv, Config{Listen: []string{"unix:" + sock}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	t.Cleanup(client.CloseIdleConnections)
	read := func() status.Document {
		t.Helper()
		resp, err := client.Get("http://tend/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/status: %d %v %s", resp.StatusCode, err, body)
		}
		var doc status.Document
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("GET /v1/status: %v in %s", err, body)
		}
		if doc.Tend == nil || doc.Tend.Pid != os.Getpid() {
			t.Fatalf("GET /v1/status: tend %+v, want this process", doc.Tend)
		}
		var whole bytes.Buffer
		_ = json.NewEncoder(&whole).Encode(doc)
		if !bytes.Equal(body, whole.Bytes()) {
			t.Fatalf("GET /v1/status answered\n%s\nencoding the document gives\n%s", body, whole.Bytes())
		}
		return doc
	}
	encodes := func() int {
		a.status.mu.Lock()
		defer a.status.mu.Unlock()
		return a.status.encodes
	}

	if doc := read(); doc.Containers[0].Usage.MemoryBytes != 1<<20 {
		t.Fatalf("first read: %+v", doc.Containers[0])
	}
	read()
	if n := encodes(); n != 1 {
		t.Fatalf("two reads of one document encoded it %d times, want once", n)
	}

	sv.change(func(d *status.Document) { d.Containers[1].State = status.Stopped }) // in place
	if doc := read(); doc.Containers[1].State != status.Stopped {
		t.Fatalf("after db stopped: state %q", doc.Containers[1].State)
	}
	sv.change(func(d *status.Document) { d.Containers[0].Usage.CPUPercent = 12.5 })
	if doc := read(); doc.Containers[0].Usage.CPUPercent != 12.5 {
		t.Fatalf("after a sample: cpu_percent %v", doc.Containers[0].Usage.CPUPercent)
	}
	sv.change(func(d *status.Document) { *d.Containers[0].Pid = 4243 }) // through a shared pointer
	if doc := read(); *doc.Containers[0].Pid != 4243 {
		t.Fatalf("after a new pid: %d", *doc.Containers[0].Pid)
	}
	read()
	if n := encodes(); n != 4 {
		t.Fatalf("three changes and six reads encoded %d documents, want 4", n)
	}
}

// equal tells apart what encodes differently, and only that.
func TestEqual(t *testing.T) {
	one, two, alsoOne := 1, 2, 1
	now := time.Now()
	at := status.At(now)
	for _, tt := range []struct {
		name string
		a, b status.Container
		want bool
	}{
		{"same", status.Container{Name: "a"}, status.Container{Name: "a"}, true},
		{"string", status.Container{Name: "a"}, status.Container{Name: "b"}, false},
		{"pointers to equal values", status.Container{Pid: &one}, status.Container{Pid: &alsoOne}, true},
		{"pointers to different values", status.Container{Pid: &one}, status.Container{Pid: &two}, false},
		{"nil and not", status.Container{Pid: &one}, status.Container{}, false},
		{"nil and empty slice", status.Container{WaitingFor: []string{}}, status.Container{}, false},
		{"slices", status.Container{WaitingFor: []string{"db: ready"}}, status.Container{WaitingFor: []string{"db: ready"}}, true},
		{"slice element", status.Container{WaitingFor: []string{"db: ready"}}, status.Container{WaitingFor: []string{"db: started"}}, false},
		{"float", status.Container{Usage: status.Usage{CPUPercent: 1}}, status.Container{Usage: status.Usage{CPUPercent: 1.5}}, false},
		{"times", status.Container{StartedAt: &at}, status.Container{StartedAt: &status.Time{Time: now}}, true},
		{"later time", status.Container{StartedAt: &at}, status.Container{StartedAt: &status.Time{Time: now.Add(time.Millisecond)}}, false},
		{"bool", status.Container{LimitsApplied: true}, status.Container{}, false},
	} {
		if got := equal(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: equal = %v, want %v", tt.name, got, tt.want)
		}
		if got := equal(tt.a, deepCopy(tt.a)); !got {
			t.Errorf("%s: not equal to its deep copy", tt.name)
		}
	}
	probes := status.ContainerDetail{Probes: map[string]status.ProbeResults{"ready": {}}}
	if !equal(probes, deepCopy(probes)) || equal(probes, status.ContainerDetail{}) {
		t.Error("maps: a map equals its copy and differs from nil")
	}
}

// benchDoc is a status document of n running containers.
func benchDoc(n int) status.Document {
	now := status.At(time.Now())
	doc := status.Document{Instance: "bench", State: status.InstanceRunning}
	for i := range n {
		pid := 1000 + i
		doc.Containers = append(doc.Containers, status.Container{Name: "s" + strconv.Itoa(i), State: status.Running,
			Pid: &pid, StartedAt: &now, WaitingFor: []string{}, Alive: status.NewCondition(true, "Started", "", now.Time),
			Ready: status.NewCondition(true, "Started", "", now.Time), Usage: status.Usage{MemoryBytes: 1 << 20, Pids: 1}})
	}
	return doc
}

// What a read of an unchanged document costs (equal) against encoding it.
func BenchmarkStatus(b *testing.B) {
	doc := benchDoc(100)
	kept := deepCopy(doc)
	b.Run("equal", func(b *testing.B) {
		for b.Loop() {
			equal(doc, kept)
		}
	})
	b.Run("DeepEqual", func(b *testing.B) {
		for b.Loop() {
			reflect.DeepEqual(doc, kept)
		}
	})
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			json.NewEncoder(io.Discard).Encode(doc)
		}
	})
}
