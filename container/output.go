package container

import (
	"bytes"
	"context"
	"hash/fnv"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tend-sh/tend/spec"
)

// MaxLine is the most of an unfinished line a LineWriter holds; a longer line is
// emitted in pieces of MaxLine bytes, each prefixed.
const MaxLine = 64 << 10

// maxBatch is how many bytes of prefixed lines a LineWriter collects from one Write
// before passing them on: one Output write per batch instead of one per line, with
// memory bounded however short the lines are.
const maxBatch = 64 << 10

// Output is tend's own stdout or stderr shared by all containers; each Write of a whole
// line is atomic with respect to other containers (and to tend's own log when it writes
// through the same Output).
type Output struct {
	mu    sync.Mutex
	w     io.Writer
	style Style
	width atomic.Int64 // the width names are padded to (Align)
}

// Style is how child lines look on one of tend's streams.
type Style struct {
	// Color gives each container's "NAME |" a colour of its own (ANSI; for a
	// terminal without NO_COLOR).
	Color bool
	// Timestamps puts the time (RFC 3339, milliseconds) before each line.
	Timestamps bool
	// Align pads names to the longest (Output.Align): for a terminal, where the
	// columns line up. A pipe or a file gets exactly "NAME | ", for the tools that
	// parse it.
	Align bool
}

// NewOutput serialises writes to w. An *Output passed as w is returned as is, so that
// tend's own log and the children's lines share one lock (and one style).
func NewOutput(w io.Writer) *Output {
	if o, ok := w.(*Output); ok {
		return o
	}
	return &Output{w: w}
}

// NewStyledOutput is NewOutput with st.
func NewStyledOutput(w io.Writer, st Style) *Output { return &Output{w: w, style: st} }

// Align pads the names of lines (when the style says so) to the longest name of a
// container or init container of s (a longer per-container init label, NAME/init[N], is printed as is). Lines
// written from now on, by every LineWriter, follow.
func (o *Output) Align(s *spec.Spec) {
	if !o.style.Align {
		return
	}
	width := 0
	for _, c := range s.InitContainers {
		width = max(width, len(c.Name))
	}
	for _, c := range s.Containers {
		width = max(width, len(c.Name))
	}
	o.width.Store(int64(width))
}

// Write writes p, which should hold whole lines, with one write to the underlying
// writer that no other Write interleaves with. A slow writer makes the others wait:
// tend's console streams are Consoles, which never block.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// Dropped is how many lines the Console under o dropped; 0 for another writer.
func (o *Output) Dropped() uint64 {
	if c, ok := o.w.(*Console); ok {
		return c.Dropped()
	}
	return 0
}

// Flush waits for the Console under o to write out what it holds, or for ctx to end.
func (o *Output) Flush(ctx context.Context) {
	if c, ok := o.w.(*Console); ok {
		c.Flush(ctx)
	}
}

// LineWriter splits what a child writes into lines and writes each as "NAME | line\n"
// to out (NAME padded by Align, coloured and timestamped by out's Style) and, when
// file is non-nil, as "TIME STREAM NAME | line\n" to file (see fileLine). It holds at most
// MaxLine (64 KiB) of an unfinished line: a longer line is emitted in pieces of MaxLine
// (each piece prefixed), so memory stays bounded whatever the child writes. Flush
// emits an unfinished last line (with a newline appended); call it when the process's
// output ends (proc's output copier does when the writer is a Cmd's Stdout or Stderr).
//
// Writes never fail, so the child's output keeps being drained: an error of out is
// ignored (tend's stdout is gone), and an error of file is kept for Flush to report
// while the lines still go to out. A LineWriter is safe for concurrent use.
type LineWriter struct {
	matches    []*LineMatch // readiness by log_line: checked on every line until matched
	mu         sync.Mutex
	name       string
	prefix     []byte // out's "NAME | ", padded and coloured
	width      int64  // the width prefix is padded to
	filePrefix []byte // file's " STREAM NAME | " (after the time)
	out        *Output
	file       io.Writer
	line       []byte   // the unfinished line, at most MaxLine bytes
	batch      []byte   // complete prefixed lines for out not yet written
	fileBatch  []byte   // complete lines for file not yet written
	fileErr    error    // the first error of file since the last Flush
	clock      stamp    // the time of the lines of the current Write
	ring       *LogRing // keeps the lines for reading (logring.go); nil: none
	stderr     bool     // the stream, for ring
}

// NewLineWriter writes the lines of one stream to out (nil: nowhere) and file (nil: none).
func NewLineWriter(name string, out *Output, file io.Writer) *LineWriter {
	w := &LineWriter{name: name, out: out, file: file, width: -1}
	return w.WithStream("stdout")
}

// WithStream names the stream in w's log file lines: "stdout" (the default) or "stderr".
func (w *LineWriter) WithStream(stream string) *LineWriter {
	w.filePrefix = []byte(" " + stream + " " + w.name + " | ")
	return w
}

// Write takes any piece of output and passes on every line it completes.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.begin()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.appendText(p)
			break
		}
		w.endLine(p[:i])
		p = p[i+1:]
	}
	w.writeBatch()
	return n, nil
}

// Flush emits the unfinished line, if any, with a newline appended. It returns the
// first error writing to the log file since the previous Flush.
func (w *LineWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.begin()
	if len(w.line) > 0 {
		w.emit(w.line)
		w.line = w.line[:0]
	}
	w.writeBatch()
	err := w.fileErr
	w.fileErr = nil
	return err
}

// appendText adds text without a newline to the unfinished line. A full line is
// emitted as a piece only when more text follows, so a line of exactly MaxLine bytes
// and its newline make one line, not a piece and an empty line.
func (w *LineWriter) appendText(text []byte) {
	for len(text) > 0 {
		if len(w.line) == MaxLine {
			w.emit(w.line)
			w.line = w.line[:0]
		}
		if w.line == nil {
			w.line = make([]byte, 0, MaxLine) // never grows past this
		}
		n := min(MaxLine-len(w.line), len(text))
		w.line = append(w.line, text[:n]...)
		text = text[n:]
	}
}

// endLine completes the unfinished line with text (no newline in it).
func (w *LineWriter) endLine(text []byte) {
	if len(w.line) == 0 && len(text) <= MaxLine {
		w.emit(text) // the common case: a whole line within one Write, not copied twice
		return
	}
	w.appendText(text)
	w.emit(w.line)
	w.line = w.line[:0]
}

// LineMatch calls onMatch once, for the first line of output (stdout or stderr) that
// re matches. The line is matched where it lies, never copied: the cost is one RE2
// match per line (linear in its length, at most MaxLine) until the first match.
type LineMatch struct {
	re      *regexp.Regexp
	onMatch func()
	matched atomic.Bool
}

// NewLineMatch returns a matcher for re.
func NewLineMatch(re *regexp.Regexp, onMatch func()) *LineMatch {
	return &LineMatch{re: re, onMatch: onMatch}
}

func (m *LineMatch) check(line []byte) {
	if !m.matched.Load() && m.re.Match(line) && m.matched.CompareAndSwap(false, true) {
		m.onMatch()
	}
}

// WithMatches makes w check every line with ms (a writer of each stream shares them).
func (w *LineWriter) WithMatches(ms ...*LineMatch) *LineWriter {
	w.matches = ms
	return w
}

// begin starts a Write or Flush: the lines it passes on are stamped with the time it
// began (one clock read per write of the child, not per line), and the prefix follows
// a changed alignment.
func (w *LineWriter) begin() {
	if w.file != nil || (w.out != nil && w.out.style.Timestamps) {
		w.clock.set(time.Now())
	}
	if w.out != nil {
		if width := w.out.width.Load(); width != w.width {
			w.width = width
			w.prefix = consolePrefix(w.prefix[:0], w.name, int(width), w.out.style.Color)
		}
	}
}

// emit adds one line to the batches and passes them on once they are big.
func (w *LineWriter) emit(text []byte) {
	for _, m := range w.matches {
		m.check(text)
	}
	if w.ring != nil {
		w.ring.add(w.stderr, text)
	}
	if w.out != nil {
		if w.out.style.Timestamps {
			w.batch = append(w.batch, w.clock.text()...)
			w.batch = append(w.batch, ' ')
		}
		w.batch = append(w.batch, w.prefix...)
		w.batch = append(w.batch, text...)
		w.batch = append(w.batch, '\n')
	}
	if w.file != nil {
		w.fileBatch = append(w.fileBatch, w.clock.text()...)
		w.fileBatch = append(w.fileBatch, w.filePrefix...)
		w.fileBatch = append(w.fileBatch, text...)
		w.fileBatch = append(w.fileBatch, '\n')
	}
	if len(w.batch) >= maxBatch || len(w.fileBatch) >= maxBatch {
		w.writeBatch()
	}
}

// writeBatch passes the complete lines on: out first, so a failing log file cannot
// cost the stdout line.
func (w *LineWriter) writeBatch() {
	if len(w.batch) > 0 {
		w.out.Write(w.batch) // nothing to do about a broken stdout but go on
		w.batch = w.batch[:0]
	}
	if len(w.fileBatch) > 0 {
		if _, err := w.file.Write(w.fileBatch); err != nil && w.fileErr == nil {
			w.fileErr = err
		}
		w.fileBatch = w.fileBatch[:0]
	}
}

// TimeLayout is the time of child lines in log files and, with --timestamps, on the
// console: RFC 3339 with milliseconds, as tend's own log writes it.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// stamp is the text of one time in TimeLayout. It formats the whole time once per
// second and only the milliseconds in between: no allocation, a few ns per Write.
type stamp struct {
	second int64 // the Unix second buf holds; buf is empty before the first set
	buf    [40]byte
	n      int
}

func (s *stamp) set(t time.Time) {
	if sec := t.Unix(); s.n == 0 || sec != s.second {
		s.n = len(t.AppendFormat(s.buf[:0], TimeLayout))
		s.second = sec
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	// "2006-01-02T15:04:05." is 20 bytes; a year past 9999 has no fixed place.
	if s.n > 23 && s.buf[19] == '.' {
		s.buf[20], s.buf[21], s.buf[22] = byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10)
	}
}

func (s *stamp) text() []byte { return s.buf[:s.n] }

// palette holds the colours of names: the six ANSI colours that read on dark and light
// backgrounds alike, then their bright forms.
var palette = []string{"36", "33", "32", "35", "34", "31", "96", "93", "92", "95", "94", "91"}

// consolePrefix appends "NAME | " with NAME padded to width and, with color, "NAME |"
// in the colour of the container (an init command NAME/init[N] takes its container's).
func consolePrefix(b []byte, name string, width int, color bool) []byte {
	if color {
		container, _, _ := strings.Cut(name, "/")
		h := fnv.New32a()
		h.Write([]byte(container))
		b = append(b, "\x1b["...)
		b = append(b, palette[h.Sum32()%uint32(len(palette))]...)
		b = append(b, 'm')
	}
	b = append(b, name...)
	for i := len(name); i < width; i++ {
		b = append(b, ' ')
	}
	b = append(b, " |"...)
	if color {
		b = append(b, "\x1b[0m"...)
	}
	return append(b, ' ')
}
