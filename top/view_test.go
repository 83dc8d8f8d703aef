package top

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

var update = flag.Bool("update", false, "write the golden screens of testdata/ from the view")

// t0 is the time of every screen of the golden tests.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func pid(n int) *int { return &n }

func at(d time.Duration) *status.Time { t := status.At(t0.Add(d)); return &t }

func cond(ok bool, reason status.Reason, msg string) status.Condition {
	return status.NewCondition(ok, reason, msg, t0.Add(-time.Hour))
}

// running is a container that runs, ready, with a memory limit.
func running(name string, p int, cpu float64, mem, limit int64) status.Container {
	return status.Container{
		Name: name, State: status.Running, TargetState: "active", Pid: pid(p), StartedAt: at(-75 * time.Minute),
		Alive: cond(true, status.ReasonRunning, ""), Ready: cond(true, status.ReasonReady, ""),
		AffectsReadiness: true, LimitsApplied: true, Cgroup: "/containers/" + name,
		Usage:  status.Usage{CPUPercent: cpu, MemoryBytes: mem, Pids: 1},
		Limits: status.Limits{MemoryBytes: limit},
	}
}

// document is an instance of three containers; change edits it into the state
// under test.
func document(change func(*status.Document)) *status.Document {
	d := &status.Document{
		Instance: "shop-1", Revision: "v42", State: status.InstanceRunning,
		Installed: cond(true, status.ReasonPrepared, ""), Ready: cond(true, status.ReasonContainersReady, ""),
		Containers: []status.Container{
			running("web", 4242, 12.5, 120<<20, 512<<20),
			running("worker", 4243, 0.4, 38<<20, 0),
			running("metrics-exporter", 4244, 1.2, 9<<20, 64<<20),
		},
		Revisions: []status.Revision{
			{ID: "v42", Active: true, Source: "file", CreatedAt: status.At(t0.Add(-2 * time.Hour)),
				Installed: cond(true, status.ReasonInstalled, ""), Ready: cond(true, status.ReasonContainersReady, "")},
			{ID: "v41", Source: "api", CreatedAt: status.At(t0.Add(-26 * time.Hour)),
				Installed: cond(true, status.ReasonInstalled, ""), Ready: cond(false, status.ReasonInactive, "")},
		},
		Cgroups: status.Cgroups{Mode: status.CgroupsV2},
		Tend:    &status.Process{Pid: 1, StartedAt: status.At(t0.Add(-2 * time.Hour)), CPUSeconds: 12, MemoryBytes: 9_700_000},
	}
	if change != nil {
		change(d)
	}
	return d
}

// model is a model that has read doc a few times, a second apart, the usage
// growing towards doc's; nil doc: tend never answered.
func model(doc *status.Document) *Model {
	m := NewModel("unix:./tend.sock", time.Second, false)
	if doc == nil {
		m.update(statusMsg{err: errors.New("no tend is answering at unix:./tend.sock: dial unix ./tend.sock: connect: connection refused"), at: t0.Add(-12 * time.Second)})
		m.update(statusMsg{err: errors.New("no tend is answering at unix:./tend.sock: dial unix ./tend.sock: connect: connection refused"), at: t0})
		return m
	}
	for i := 5; i >= 0; i-- {
		d := *doc
		d.Containers = append([]status.Container{}, doc.Containers...)
		for j := range d.Containers {
			d.Containers[j].Usage.CPUPercent *= 1 - float64(i)/8
			d.Containers[j].Usage.MemoryBytes -= int64(i) << 20
		}
		tend := *doc.Tend
		tend.CPUSeconds -= 0.004 * float64(i)
		d.Tend = &tend
		m.update(statusMsg{doc: &d, at: t0.Add(-time.Duration(i) * time.Second)})
	}
	return m
}

// screens are the states the golden files show.
var screens = []struct {
	name  string
	model func() *Model
}{
	{"running", func() *Model { return model(document(nil)) }},
	{"backoff", func() *Model {
		return model(document(func(d *status.Document) {
			w := &d.Containers[1]
			w.State, w.Pid, w.StartedAt, w.Restarts = status.Backoff, nil, nil, 5
			w.NextStartAt = at(4 * time.Second)
			w.LastExit = &status.Exit{Code: 1, At: status.At(t0.Add(-2 * time.Second)), Reason: "exit code 1"}
			w.Alive, w.Ready = cond(false, status.ReasonExited, ""), cond(false, status.ReasonExited, "exit code 1")
			d.Ready = cond(false, status.ReasonContainersNotReady, "worker: exit code 1")
		}))
	}},
	{"oomkilled", func() *Model {
		return model(document(func(d *status.Document) {
			w := &d.Containers[0]
			w.Restarts, w.StartedAt = 2, at(-20*time.Second)
			w.LastExit = &status.Exit{Code: 137, Signal: "SIGKILL", At: status.At(t0.Add(-21 * time.Second)), Reason: status.ExitOOMKilled}
			w.Usage.OOMKills = 2
		}))
	}},
	{"limits-not-applied", func() *Model {
		return model(document(func(d *status.Document) {
			d.Cgroups = status.Cgroups{Mode: status.CgroupsOff, Reason: "no writable cgroup hierarchy"}
			for i := range d.Containers {
				c := &d.Containers[i]
				c.Cgroup = ""
				if c.Limits.MemoryBytes > 0 {
					c.LimitsApplied, c.LimitsReason = false, "memory: cgroups off"
				}
			}
		}))
	}},
	{"unreachable", func() *Model { return model(nil) }},
	{"unreachable-after-running", func() *Model {
		m := model(document(nil))
		m.update(statusMsg{err: errors.New("no tend is answering at unix:./tend.sock: connection refused"), at: t0.Add(3 * time.Second)})
		return m
	}},
}

// TestViewGolden compares each screen at 80×24 and 200×50 with its golden file
// (go test ./top -run TestViewGolden -update writes them).
func TestViewGolden(t *testing.T) {
	for _, s := range screens {
		for _, size := range [][2]int{{80, 24}, {200, 50}} {
			name := fmt.Sprintf("%s-%dx%d", s.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				lines := View(s.model(), size[0], size[1])
				checkScreen(t, lines, size[0], size[1])
				golden(t, name, strings.Join(lines, "\n")+"\n")
			})
		}
	}
}

// TestViewScreens are the other screens at 80×24: describe, logs (and a search),
// revisions with a question, help, and the coloured table.
func TestViewScreens(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		msgs []any
		m    func(*Model)
	}{
		{name: "describe", keys: []string{"enter"}, msgs: []any{detailMsg{name: "web", lines: []string{"Name:   web", "State:  running", "", "Events:", "  AGE  TYPE    REASON   MESSAGE", "  75m  Normal  Started  pid 4242"}}}},
		{name: "logs", keys: []string{"j", "l"}, msgs: []any{logMsg{name: "worker", lines: []string{"09:59:58 took job 17", "09:59:59 job 17 done", "10:00:00 took job 18"}}}},
		{name: "logs-search", keys: []string{"j", "l", "/", "t", "o", "o", "k"}, msgs: []any{logMsg{name: "worker", lines: []string{"09:59:58 took job 17", "09:59:59 job 17 done", "10:00:00 took job 18"}}}},
		{name: "revisions-activate", keys: []string{"v", "j", "a"}},
		{name: "stop-question", keys: []string{"s"}},
		{name: "action-refused", msgs: []any{actMsg{action: Restart, target: "web", err: errors.New("127.0.0.1:7070 answered 403 Forbidden; pass --api-token-file FILE (or TEND_API_TOKEN_FILE) with the token the tend at 127.0.0.1:7070 was started with")}}},
		{name: "help", keys: []string{"?"}},
		{name: "colour", m: func(m *Model) { m.Color = true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := model(document(nil))
			if c.m != nil {
				c.m(m)
			}
			for _, k := range c.keys {
				m.key(k)
			}
			for _, msg := range c.msgs {
				m.update(msg)
			}
			lines := View(m, 80, 24)
			checkScreen(t, lines, 80, 24)
			golden(t, c.name+"-80x24", strings.Join(lines, "\n")+"\n")
		})
	}
}

// checkScreen fails unless lines are exactly a screen of width × height.
func checkScreen(t *testing.T, lines []string, width, height int) {
	t.Helper()
	if len(lines) != height {
		t.Fatalf("%d lines, want %d", len(lines), height)
	}
	for i, l := range lines {
		if w := textWidth(stripSGR(l)); w != width {
			t.Errorf("line %d is %d cells wide, want %d: %q", i+1, w, width, l)
		}
	}
}

func stripSGR(s string) string {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], 'm')
		s = s[:i] + s[i+j+1:]
	}
}

// golden compares got with testdata/NAME.golden, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./top -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("screen differs from %s (-update rewrites it after a change meant so):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
