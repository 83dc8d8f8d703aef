package resources

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"github.com/tend-sh/tend/internal/testutil"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
)

// syncBuffer collects output that is written while the test reads it.
type syncBuffer = testutil.SyncBuffer

// testOptions are small timeouts and fast retries; the log goes to logs.
func testOptions(logs *syncBuffer) Options {
	o := DefaultOptions()
	o.Log = zerolog.New(logs)
	o.ConnectTimeout = time.Second
	o.IdleTimeout = 300 * time.Millisecond
	o.Retry = restart.Policy{MinPeriod: 10 * time.Millisecond, MaxPeriod: 50 * time.Millisecond, Backoff: 2, MaxJitter: 5 * time.Millisecond}
	o.ReloadRounds = 2
	return o
}

func md5sum(b []byte) string {
	s := md5.Sum(b)
	return "MD5:" + hex.EncodeToString(s[:])
}

func sha256sum(b []byte) string {
	s := sha256.Sum256(b)
	return "SHA256:" + hex.EncodeToString(s[:])
}

// server serves files by path and counts requests per path. A handler set with
// handle overrides a file.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	handlers map[string]http.HandlerFunc
	hits     map[string]int
}

func newServer(t *testing.T) *server {
	s := &server{files: map[string][]byte{}, handlers: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		h, data, ok := s.handlers[r.URL.Path], s.files[r.URL.Path], true
		if h == nil {
			_, ok = s.files[r.URL.Path]
		}
		s.mu.Unlock()
		switch {
		case h != nil:
			h(w, r)
		case ok:
			w.Write(data)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) file(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
	return s.URL + path
}

func (s *server) handle(path string, h http.HandlerFunc) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = h
	return s.URL + path
}

func (s *server) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// loadSpec writes text (with {DIR} replaced by dir) as dir/spec.yaml and loads it.
func loadSpec(t *testing.T, dir, text string) *spec.Spec {
	t.Helper()
	text = strings.ReplaceAll(text, "{DIR}", dir)
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, spec.Options{Environ: os.Environ(), Hostname: "test"})
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	return s
}

// waitFor polls cond until it holds or 10 s pass, and reports what it last saw.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last saw: %s", what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leftovers lists the temporary entries tend left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".*.tend-*"))
	return m
}
