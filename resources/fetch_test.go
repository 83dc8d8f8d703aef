package resources

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/internal/beneath"
)

var payload = []byte(strings.Repeat("tend resource payload\n", 4096))

// fetchInto runs one fetch of urls into a new directory with rounds rounds.
func fetchInto(t *testing.T, opts Options, urls []string, checksum string, rounds int) (string, string, []error) {
	t.Helper()
	dir := t.TempDir()
	sum, err := ParseChecksum(checksum)
	if err != nil {
		t.Fatal(err)
	}
	var failures []error
	var p Progress
	path, err := newFetcher(opts).fetch(context.Background(), Source{Name: "r", URLs: urls, Checksum: sum}, dir, ".r.tend-part-*", &p, rounds, nil, nil,
		func(err error) { failures = append(failures, err) })
	if err != nil {
		if left := leftovers(t, dir); len(left) > 0 {
			t.Errorf("temporary files left after a failure: %v", left)
		}
		return "", dir, append(failures, err)
	}
	if done, total := p.Bytes(); done != int64(len(payload)) || (total != nil && *total != done) {
		t.Errorf("progress = %d of %v, want %d", done, total, len(payload))
	}
	return path, dir, failures
}

func checkContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: %d bytes, want %d", path, len(got), len(want))
	}
}

func TestFetchGoodMD5AndSHA256(t *testing.T) {
	srv := newServer(t)
	u := srv.file("/model.bin", payload)
	for _, sum := range []string{md5sum(payload), sha256sum(payload), "EMPTY:"} {
		path, dir, errs := fetchInto(t, testOptions(&syncBuffer{}), []string{u}, sum, 1)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", sum, errs)
		}
		if filepath.Dir(path) != dir {
			t.Errorf("temporary file %s is not in the target directory %s", path, dir)
		}
		checkContent(t, path, payload)
	}
}

func TestFetchChecksumMismatch(t *testing.T) {
	srv := newServer(t)
	u := srv.file("/model.bin", payload)
	want := "MD5:99300b5d1e10ec1d72cb45d023fe86ac"
	_, _, errs := fetchInto(t, testOptions(&syncBuffer{}), []string{u}, want, 2)
	if len(errs) != 3 { // two failed rounds and the final error
		t.Fatalf("errors = %v, want two failed rounds", errs)
	}
	var mm *MismatchError
	if !errors.As(errs[0], &mm) || mm.Want != want || mm.Got != md5sum(payload) {
		t.Errorf("error = %v, want a checksum mismatch", errs[0])
	}
	if msg := errs[0].Error(); msg != "checksum mismatch: want "+want+", got "+md5sum(payload) {
		t.Errorf("message = %q", msg)
	}
	if srv.count("/model.bin") != 2 {
		t.Errorf("requests = %d, want 2 (one per round)", srv.count("/model.bin"))
	}
}

func TestFetchFirstURL404ThenSecond(t *testing.T) {
	srv := newServer(t)
	good := srv.file("/b/model.bin", payload)
	path, _, errs := fetchInto(t, testOptions(&syncBuffer{}), []string{srv.URL + "/a/model.bin", good}, md5sum(payload), 1)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	checkContent(t, path, payload)
	if srv.count("/a/model.bin") != 1 || srv.count("/b/model.bin") != 1 {
		t.Errorf("hits: a=%d b=%d, want 1 each", srv.count("/a/model.bin"), srv.count("/b/model.bin"))
	}
}

func TestFetchAllFailReportsEachURL(t *testing.T) {
	srv := newServer(t)
	srv.handle("/500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) })
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + ln.Addr().String() + "/x"
	ln.Close()
	_, _, errs := fetchInto(t, testOptions(&syncBuffer{}), []string{srv.URL + "/404", srv.URL + "/500", refused, "rbtorrent:abc"}, "EMPTY:", 1)
	if len(errs) == 0 {
		t.Fatal("fetch succeeded")
	}
	msg := errs[len(errs)-1].Error()
	for _, want := range []string{"/404: HTTP 404", "/500: HTTP 500", "/x: connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

// dropHalf declares the full length, sends half and closes the connection.
func dropHalf(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(200)
	w.Write(payload[:len(payload)/2])
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func TestFetchDroppedConnectionThenSuccess(t *testing.T) {
	srv := newServer(t)
	var n atomic.Int32
	u := srv.handle("/model.bin", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			dropHalf(w, r)
			return
		}
		w.Write(payload)
	})
	path, _, errs := fetchInto(t, testOptions(&syncBuffer{}), []string{u}, md5sum(payload), 0)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "connection closed after") {
		t.Fatalf("failures = %v, want one dropped connection", errs)
	}
	checkContent(t, path, payload)
}

func TestFetchShortBody(t *testing.T) {
	srv := newServer(t)
	u := srv.handle("/model.bin", func(w http.ResponseWriter, r *http.Request) {
		// A lying Content-Length: the body ends early but the connection closes cleanly.
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)+100))
		w.Header().Set("Connection", "close")
		w.Write(payload)
	})
	_, _, errs := fetchInto(t, testOptions(&syncBuffer{}), []string{u}, "EMPTY:", 1)
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "of "+strconv.Itoa(len(payload)+100)+" bytes") {
		t.Fatalf("errors = %v, want a short body", errs)
	}
}

func TestFetchStallTimesOutThenRetrySucceeds(t *testing.T) {
	srv := newServer(t)
	var n atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	u := srv.handle("/model.bin", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
			w.Write(payload[:1000])
			w.(http.Flusher).Flush()
			select { // stall mid-body until the client gives up
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Write(payload)
	})
	opts := testOptions(&syncBuffer{})
	opts.IdleTimeout = 200 * time.Millisecond
	path, _, errs := fetchInto(t, opts, []string{u}, sha256sum(payload), 0)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "stalled: no data for 200ms after 1000 bytes") {
		t.Fatalf("failures = %v, want one stall", errs)
	}
	checkContent(t, path, payload)
}

func TestFetchStalledHeaders(t *testing.T) {
	srv := newServer(t)
	u := srv.handle("/model.bin", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	opts := testOptions(&syncBuffer{})
	opts.IdleTimeout = 100 * time.Millisecond
	_, _, errs := fetchInto(t, opts, []string{u}, "EMPTY:", 1)
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "stalled: no answer for 100ms") {
		t.Fatalf("errors = %v, want a stall", errs)
	}
}

func TestFetchFileURLAndSkippedSchemes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(src, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	path, _, errs := fetchInto(t, testOptions(logs), []string{"rbtorrent:abc", "sbr:123", "file://" + src}, md5sum(payload), 1)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	checkContent(t, path, payload)
	if got := strings.Count(logs.String(), "skipping URLs tend cannot fetch"); got != 1 {
		t.Errorf("skip log lines = %d, want 1; log:\n%s", got, logs)
	}
}

func TestFetchProgressLog(t *testing.T) {
	srv := newServer(t)
	u := srv.handle("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		for i := 0; i < 4; i++ {
			w.Write(payload[i*len(payload)/4 : (i+1)*len(payload)/4])
			w.(http.Flusher).Flush()
			time.Sleep(30 * time.Millisecond)
		}
	})
	logs := &syncBuffer{}
	opts := testOptions(logs)
	opts.ProgressAfter, opts.ProgressEvery = 20*time.Millisecond, 20*time.Millisecond
	if _, _, errs := fetchInto(t, opts, []string{u}, "EMPTY:", 1); len(errs) > 0 {
		t.Fatal(errs)
	}
	if !strings.Contains(logs.String(), `"percent":"`) || !strings.Contains(logs.String(), `"rate":"`) || !strings.Contains(logs.String(), `"message":"downloaded"`) {
		t.Errorf("no progress lines with percent and rate:\n%s", logs)
	}
}

func TestParseChecksumAndPeriod(t *testing.T) {
	for _, bad := range []string{"MD5:xyz", "MD5:", "SHA1:00", "EMPTY:00", "nothing"} {
		if _, err := ParseChecksum(bad); err == nil {
			t.Errorf("ParseChecksum(%q) succeeded", bad)
		}
	}
	if c, err := ParseChecksum("MD5:99300B5D1E10EC1D72CB45D023FE86AC"); err != nil || c.String() != "MD5:99300b5d1e10ec1d72cb45d023fe86ac" {
		t.Errorf("ParseChecksum upper case = %v, %v", c, err)
	}
	for in, want := range map[string]time.Duration{"0d0h0m": 0, "0d1h0m": time.Hour, "1d2h3m": 26*time.Hour + 3*time.Minute} {
		if got, err := ParseCheckPeriod(in); err != nil || got != want {
			t.Errorf("ParseCheckPeriod(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseCheckPeriod("1h"); err == nil {
		t.Error("ParseCheckPeriod(1h) succeeded")
	}
}

// A file: URL beneath instance.dir whose directory a container's user replaced with a
// symlink to a root-only place is not read: the resource would hand the file to the
// containers.
func TestFileURLIsNotReadThroughAPlantedLink(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(root, "data")); err != nil {
		t.Fatal(err)
	}
	sum, _ := ParseChecksum("EMPTY:")
	var p Progress
	_, err := newFetcher(DefaultOptions()).fetch(context.Background(),
		Source{Name: "r", URLs: []string{fileURL(filepath.Join(root, "data", "secret"))}, Checksum: sum, Root: root},
		root, ".r.tend-part-*", &p, 1, nil, nil, func(error) {})
	if !errors.Is(err, beneath.ErrOutside) {
		t.Errorf("err = %v; want the link refused", err)
	}
}
