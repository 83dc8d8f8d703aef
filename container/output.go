package container

import (
	"bytes"
	"io"
	"regexp"
	"sync"
	"sync/atomic"
)

// MaxLine is the most of an unfinished line a LineWriter holds; a longer line is
// emitted in pieces of MaxLine bytes, each prefixed.
const MaxLine = 64 << 10

// maxBatch is how many bytes of prefixed lines a LineWriter collects from one Write
// before passing them on: one Output write per batch instead of one per line, with
// memory bounded however short the lines are.
const maxBatch = 64 << 10

// Output is tend's own stdout or stderr shared by all containers; each Write of a whole
// line is atomic with respect to other containers.
type Output struct {
	mu sync.Mutex
	w  io.Writer
}

// NewOutput serialises writes to w.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

// Write writes p, which should hold whole lines, with one write to the underlying
// writer that no other Write interleaves with. A slow writer makes the others wait.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// LineWriter splits what a child writes into lines and writes each as "NAME | line\n"
// to out and, when file is non-nil, the same prefixed line to file. It holds at most
// MaxLine (64 KiB) of an unfinished line: a longer line is emitted in pieces of MaxLine
// (each piece prefixed), so memory stays bounded whatever the child writes. Flush
// emits an unfinished last line (with a newline appended); call it when the process's
// output ends (proc's output copier does when the writer is a Cmd's Stdout or Stderr).
//
// Writes never fail, so the child's output keeps being drained: an error of out is
// ignored (tend's stdout is gone), and an error of file is kept for Flush to report
// while the lines still go to out. A LineWriter is safe for concurrent use.
type LineWriter struct {
	matches []*LineMatch // readiness by log_line: checked on every line until matched
	mu      sync.Mutex
	prefix  []byte // "NAME | "
	out     *Output
	file    io.Writer
	line    []byte   // the unfinished line, at most MaxLine bytes
	batch   []byte   // complete prefixed lines not yet written
	fileErr error    // the first error of file since the last Flush
	ring    *LogRing // keeps the lines for reading (logring.go); nil: none
	stderr  bool     // the stream, for ring
}

// NewLineWriter writes the lines of one stream to out (nil: nowhere) and file (nil: none).
func NewLineWriter(name string, out *Output, file io.Writer) *LineWriter {
	return &LineWriter{prefix: []byte(name + " | "), out: out, file: file}
}

// Write takes any piece of output and passes on every line it completes.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
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

// emit adds one prefixed line to the batch and passes the batch on once it is big.
func (w *LineWriter) emit(text []byte) {
	for _, m := range w.matches {
		m.check(text)
	}
	if w.ring != nil {
		w.ring.add(w.stderr, text)
	}
	w.batch = append(w.batch, w.prefix...)
	w.batch = append(w.batch, text...)
	w.batch = append(w.batch, '\n')
	if len(w.batch) >= maxBatch {
		w.writeBatch()
	}
}

// writeBatch passes the complete lines on: out first, so a failing log file cannot
// cost the stdout line.
func (w *LineWriter) writeBatch() {
	if len(w.batch) == 0 {
		return
	}
	if w.out != nil {
		w.out.Write(w.batch) // nothing to do about a broken stdout but go on
	}
	if w.file != nil {
		if _, err := w.file.Write(w.batch); err != nil && w.fileErr == nil {
			w.fileErr = err
		}
	}
	w.batch = w.batch[:0]
}
