package api

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/tend-sh/tend/output"
)

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

// What one GET /v1/logs call may pin (docs/reference.md "Reliability"): it copies at
// most logBatchBytes of kept lines at a time (and one line of each container it
// reads, however long), and a client that does not take a line within writeTimeout
// is dropped, not buffered for. How many calls are served at once is capped per
// listener (connlimit.go).
const logBatchBytes = 64 << 10

// serveLogs is GET /v1/logs?container=NAME&lines=N&follow=true (docs/reference.md "Logs").
func (a *Server) serveLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := defaultLogLines
	if v := q.Get("lines"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "lines: must be a number 0 or more, got " + strconv.Quote(v)})
			return
		}
	}
	if readers := logReaders(r); readers != nil {
		select {
		case readers <- struct{}{}:
			defer func() { <-readers }()
		default:
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{
				"error": fmt.Sprintf("too many log readers on this listener (at most %d at once); try again", cap(readers))})
			return
		}
	}
	names := q["container"]
	rings, err := a.sv.LogRings(names)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	s := &logStream{names: names}
	if q.Get("follow") == "true" {
		s.wake = make(chan struct{}, 1)
		// Watching before the first read: no line falls between the two.
		defer a.sv.WatchLogs(s.wake)()
	}
	defer s.stop()
	s.begin(rings, n)

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	out := newLogWriter(w)
	if !s.drain(out) || s.wake == nil {
		return
	}
	a.followLogs(r, s, out)
}

// followLogs writes the lines the rings of s gain until the client goes, the API
// closes or a write fails; a ring lapping the follower is reported as dropped lines.
func (a *Server) followLogs(r *http.Request, s *logStream, out *logWriter) {
	for {
		select {
		case <-r.Context().Done():
			return
		case <-a.closed:
			return
		case <-s.wake:
		}
		rings, _ := a.sv.LogRings(nil)
		for _, ring := range rings {
			if s.reads(ring) || len(s.names) > 0 && !slices.Contains(s.names, ring.Name()) {
				continue
			}
			s.add(ring, 0) // a container that began after the call
		}
		// Up to the lines there are now: a container that never pauses does not keep
		// the others' new rings from being picked up.
		for _, c := range s.cursors {
			c.end = c.ring.Next()
		}
		if !s.drain(out) {
			return
		}
	}
}

// logWriter writes logEntry lines, each with writeTimeout to be taken.
type logWriter struct {
	rc  *http.ResponseController
	buf *bufio.Writer
	enc *json.Encoder // into buf
}

func newLogWriter(w http.ResponseWriter) *logWriter {
	o := &logWriter{rc: http.NewResponseController(w), buf: bufio.NewWriter(w)}
	o.enc = json.NewEncoder(o.buf)
	return o
}

// write encodes e; false when the client is gone or did not take it in time.
func (o *logWriter) write(e logEntry) bool {
	_ = o.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return o.enc.Encode(e) == nil
}

func (o *logWriter) line(l output.Line) bool {
	e := logEntry{Time: l.Time.UTC().Format(timeFormat), Container: l.Container, Stream: "stdout", Line: l.Line}
	if l.Stderr {
		e.Stream = "stderr"
	}
	return o.write(e)
}

func (o *logWriter) dropped(name string, lost uint64) bool {
	return o.write(logEntry{Time: time.Now().UTC().Format(timeFormat), Container: name,
		Line: fmt.Sprintf("[%d lines dropped: read too slowly]", lost), Dropped: lost})
}

// flush sends what is buffered to the client at once; false when it is gone.
func (o *logWriter) flush() bool {
	_ = o.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return o.buf.Flush() == nil && o.rc.Flush() == nil
}

// timeFormat is RFC 3339 with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// logStream is what one GET /v1/logs call reads: a cursor into every ring.
type logStream struct {
	cursors []*logCursor
	names   []string // the containers asked for; none: all
	stops   []func()
	wake    chan struct{} // nil: not following
}

// logCursor is where a call reads one ring: the number of the next line to copy, the
// number it stops before, and the copied lines not written yet (batch[at:]).
type logCursor struct {
	ring      *output.Ring
	next, end uint64
	batch     []output.Line
	at        int
}

func (s *logStream) add(r *output.Ring, next uint64) *logCursor {
	c := &logCursor{ring: r, next: next, end: math.MaxUint64}
	s.cursors = append(s.cursors, c)
	if s.wake != nil {
		s.stops = append(s.stops, r.Watch(s.wake))
	}
	return c
}

func (s *logStream) reads(r *output.Ring) bool {
	return slices.ContainsFunc(s.cursors, func(c *logCursor) bool { return c.ring == r })
}

func (s *logStream) stop() {
	for _, stop := range s.stops {
		stop()
	}
}

// begin sets a cursor on every ring at the first of the last n lines of them all
// (merged by time), ending at the lines each has now. Only the lines' times are
// copied to find where.
func (s *logStream) begin(rings []*output.Ring, n int) {
	type kept struct {
		nanos int64
		ring  int
	}
	var all []kept
	for i, ring := range rings {
		next := ring.Next()
		times, first := ring.Times(next - min(next, uint64(n)))
		for _, t := range times {
			all = append(all, kept{t, i})
		}
		s.add(ring, first).end = first + uint64(len(times))
	}
	slices.SortStableFunc(all, func(a, b kept) int { return cmp.Compare(a.nanos, b.nanos) })
	for _, k := range all[:len(all)-min(n, len(all))] {
		s.cursors[k.ring].next++ // older than the last n of them all
	}
}

// drain writes the lines of every cursor up to its end, merged by time, copying at
// most logBatchBytes of them at a time; false when the client is gone.
func (s *logStream) drain(out *logWriter) bool {
	per := logBatchBytes / max(len(s.cursors), 1)
	for {
		var first *logCursor
		for _, c := range s.cursors {
			if c.at == len(c.batch) && c.next < c.end && !c.refill(out, per) {
				return false
			}
			if c.at < len(c.batch) && (first == nil || c.batch[c.at].Time.Before(first.batch[first.at].Time)) {
				first = c
			}
		}
		if first == nil {
			return out.flush()
		}
		if !out.line(first.batch[first.at]) {
			return false
		}
		first.batch[first.at] = output.Line{} // its text is not pinned while the rest is written
		first.at++
	}
}

// refill copies the next lines of c's ring, up to maxBytes of them and c.end, and
// reports the lines the ring dropped before c read them; false when the client is gone.
func (c *logCursor) refill(out *logWriter, maxBytes int) bool {
	var lost uint64
	c.batch, c.next, lost = c.ring.Read(c.batch[:0], c.next, maxBytes)
	c.at = 0
	if c.next > c.end { // the ring gained lines meanwhile, past where the call stops
		extra := int(min(c.next-c.end, uint64(len(c.batch))))
		clear(c.batch[len(c.batch)-extra:])
		c.batch, c.next = c.batch[:len(c.batch)-extra], c.end
	}
	return lost == 0 || out.dropped(c.ring.Name(), lost)
}
