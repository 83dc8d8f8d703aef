package output

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// MaxLine is the most of an unfinished line a LineWriter holds; a longer line is
// emitted in pieces of MaxLine bytes, each prefixed.
const MaxLine = 64 << 10

// maxBatch is how many bytes of prefixed lines a LineWriter collects from one Write
// before passing them on: one Console write per batch instead of one per line, with
// memory bounded however short the lines are.
const maxBatch = 64 << 10

// LineWriter splits what a child writes into lines and writes each as "NAME | line\n"
// to out (NAME padded by Align, coloured and timestamped by out's Style) and, when
// file is non-nil, as "TIME STREAM NAME | line\n" to file. It holds at most
// MaxLine (64 KiB) of an unfinished line: a longer line is emitted in pieces of MaxLine
// (each piece prefixed), so memory stays bounded whatever the child writes. Flush
// emits an unfinished last line (with a newline appended); call it when the process's
// output ends (proc's output poller does when the writer is a Cmd's Stdout or Stderr).
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
	out        *Console
	file       io.Writer
	line       []byte // the unfinished line, at most MaxLine bytes
	batch      []byte // complete prefixed lines for out not yet written
	fileBatch  []byte // complete lines for file not yet written
	fileErr    error  // the first error of file since the last Flush
	clock      stamp  // the time of the lines of the current Write
	ring       *Ring  // keeps the lines for reading (ring.go); nil: none
	stderr     bool   // the stream, for ring
}

// NewLineWriter writes the lines of one stream to out (nil: nowhere) and file (nil: none).
func NewLineWriter(name string, out *Console, file io.Writer) *LineWriter {
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

// WithMatches makes w check every line with ms (a writer of each stream shares them).
func (w *LineWriter) WithMatches(ms ...*LineMatch) *LineWriter {
	w.matches = ms
	return w
}

// WithRing makes w keep every line it emits in r, as stream stderr or stdout.
func (w *LineWriter) WithRing(r *Ring, stderr bool) *LineWriter {
	w.ring, w.stderr = r, stderr
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
