package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/spec"
)

// logHub holds every container's and init container's LogRing by name (README "Logs"). A ring outlives
// the Container objects of its name (restarts, a reload that changes the
// container), so history and followers carry on; a reload that removes the name
// drops it.
type logHub struct {
	mu     sync.Mutex
	rings  map[string]*container.LogRing
	wakers container.Wakers // woken when a ring is added
	closed chan struct{}    // the API is shutting down: followers end
	once   sync.Once
}

func newLogHub() *logHub {
	return &logHub{rings: map[string]*container.LogRing{}, closed: make(chan struct{})}
}

// ring is the ring of the container or init container name, created or resized to
// keep lines.
func (h *logHub) ring(name string, keep int) *container.LogRing {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.rings[name]; ok {
		r.Resize(keep)
		return r
	}
	r := container.NewLogRing(name, keep)
	h.rings[name] = r
	h.wakers.Wake()
	return r
}

// retain drops the rings of names that are not in s (a reload removed them).
func (h *logHub) retain(s *spec.Spec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range h.rings {
		if !slices.ContainsFunc(s.Containers, func(c spec.Container) bool { return c.Name == name }) &&
			!slices.ContainsFunc(s.InitContainers, func(c spec.InitContainer) bool { return c.Name == name }) {
			delete(h.rings, name)
		}
	}
}

// selected is the rings of names (all when empty); an unknown name is an error.
func (h *logHub) selected(names []string) ([]*container.LogRing, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*container.LogRing
	for name, r := range h.rings {
		if len(names) == 0 || slices.Contains(names, name) {
			out = append(out, r)
		}
	}
	for _, n := range names {
		if h.rings[n] == nil {
			return nil, fmt.Errorf("no such container %q", n)
		}
	}
	return out, nil
}

func (h *logHub) watch(wake chan<- struct{}) (stop func()) { return h.wakers.Watch(wake) }

func (h *logHub) close() { h.once.Do(func() { close(h.closed) }) }

// logEntry is one JSON line of GET /v1/logs: a line of output, or how many lines a
// follower lost because it read slower than the container wrote.
type logEntry struct {
	Time      string `json:"time"`
	Container string `json:"container"`
	Stream    string `json:"stream,omitempty"`
	Line      string `json:"line"`
	Dropped   uint64 `json:"dropped,omitempty"`
}

// defaultLogLines is what GET /v1/logs answers without lines=.
const defaultLogLines = 100

// serveLogs is GET /v1/logs?container=NAME&lines=N&follow=true (README "Logs"). Its
// access rule is the mutating endpoints': logs may hold secrets.
func (sv *Supervisor) serveLogs(trusted bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !trusted {
			if code, msg := sv.authorize(r); code != 0 {
				writeJSON(w, code, map[string]string{"error": msg})
				return
			}
		}
		q := r.URL.Query()
		n := defaultLogLines
		if v := q.Get("lines"); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 0 {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "lines: must be a number 0 or more, got " + strconv.Quote(v)})
				return
			}
		}
		names := q["container"]
		rings, err := sv.logs.selected(names)
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
			return
		}
		f := &logFollower{next: map[*container.LogRing]uint64{}, names: names}
		if q.Get("follow") == "true" {
			f.wake = make(chan struct{}, 1)
			// Watching before the first read: no line falls between the two.
			defer sv.logs.watch(f.wake)()
		}
		defer f.stop()
		var lines []container.LogLine
		for _, ring := range rings {
			next := ring.Next()
			got, next, _ := ring.Since(next - min(next, uint64(n)))
			lines = append(lines, got...)
			f.add(ring, next)
		}
		byTime(lines)
		lines = lines[len(lines)-min(n, len(lines)):]

		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		out := &logWriter{w: w, buf: bufio.NewWriter(w)}
		out.enc = json.NewEncoder(out.buf)
		if !out.write(lines) || f.wake == nil {
			return
		}
		sv.followLogs(r, f, out)
	}
}

// followLogs writes the lines the rings of f gain until the client goes, the API
// closes or a write fails; a ring lapping the follower is reported as dropped lines.
func (sv *Supervisor) followLogs(r *http.Request, f *logFollower, out *logWriter) {
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sv.logs.closed:
			return
		case <-f.wake:
		}
		rings, _ := sv.logs.selected(nil)
		var lines []container.LogLine
		for _, ring := range rings {
			from, known := f.next[ring]
			if !known {
				if len(f.names) > 0 && !slices.Contains(f.names, ring.Name()) {
					continue
				}
				f.add(ring, 0) // a container that began after the call
			}
			got, next, lost := ring.Since(from)
			f.next[ring] = next
			if lost > 0 {
				_ = out.enc.Encode(logEntry{Time: time.Now().UTC().Format(timeFormat), Container: ring.Name(),
					Line: fmt.Sprintf("[%d lines dropped: read too slowly]", lost), Dropped: lost})
			}
			lines = append(lines, got...)
		}
		byTime(lines)
		if !out.write(lines) {
			return
		}
	}
}

// logWriter writes logEntry lines and flushes them to the client at once.
type logWriter struct {
	w   http.ResponseWriter
	buf *bufio.Writer
	enc *json.Encoder // into buf
}

// write reports false when the client is gone.
func (o *logWriter) write(lines []container.LogLine) bool {
	for _, l := range lines {
		e := logEntry{Time: l.Time.UTC().Format(timeFormat), Container: l.Container, Stream: "stdout", Line: l.Line}
		if l.Stderr {
			e.Stream = "stderr"
		}
		_ = o.enc.Encode(e)
	}
	if o.buf.Flush() != nil {
		return false
	}
	if fl, ok := o.w.(http.Flusher); ok {
		fl.Flush()
	}
	return true
}

// timeFormat is RFC 3339 with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func byTime(lines []container.LogLine) {
	slices.SortStableFunc(lines, func(a, b container.LogLine) int { return a.Time.Compare(b.Time) })
}

// logFollower is what one follow call reads: the next line number of every ring.
type logFollower struct {
	next  map[*container.LogRing]uint64
	names []string // the containers asked for; none: all
	stops []func()
	wake  chan struct{} // nil: not following
}

func (f *logFollower) add(r *container.LogRing, next uint64) {
	f.next[r] = next
	if f.wake != nil {
		f.stops = append(f.stops, r.Watch(f.wake))
	}
}

func (f *logFollower) stop() {
	for _, s := range f.stops {
		s()
	}
}
