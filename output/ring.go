package output

import (
	"sync"
	"time"
)

// Ring keeps a container's most recent lines of output for reading (README
// "Logs"): keep lines of at most MaxLine bytes each, with the time and stream of
// each, and at most keep × BytesPerKeptLine bytes of them (the newest line always),
// so that a container writing long lines cannot make tend hold keep × 64 KiB. Every line is numbered; readers ask for the lines from a number on, and a
// reader that fell behind by more than the ring holds learns how many it lost. A
// writer never waits for a reader. A Ring is safe for concurrent use.
type Ring struct {
	name string

	mu     sync.Mutex
	keep   int        // the most lines kept
	slots  []ringSlot // line number seq is in slots[seq%keep]; grown as lines come
	oldest uint64     // the number of the oldest line kept
	next   uint64     // the number of the next line
	bytes  int        // the capacity of every kept line's text
	budget int        // the most bytes may be
	wakers Wakers     // woken after every line
}

// BytesPerKeptLine is the average length of line a ring keeps keep_lines of; with
// longer lines it keeps fewer.
const BytesPerKeptLine = 1 << 10

// reuseBelow is the capacity up to which a slot keeps its text's buffer for any later
// line: a ring that is full costs no allocation per line, only the copy. A bigger
// buffer is replaced when a line of less than half its size comes, so that the
// bytes the ring holds stay what its lines need.
const reuseBelow = 4 << 10

// ringSlot is one kept line.
type ringSlot struct {
	nanos  int64 // Unix time of the line
	stderr bool
	text   []byte
}

// Line is a kept line as readers get it.
type Line struct {
	Time      time.Time
	Container string
	Stderr    bool
	Line      string
}

// NewRing keeps the last keep lines of container name (0: none).
func NewRing(name string, keep int) *Ring {
	return &Ring{name: name, keep: keep, budget: keep * BytesPerKeptLine}
}

// minSlots is the first allocation of slots: a container that prints a few lines
// does not pay for keep_lines of them (40 KiB at the default, and the GC scans them).
const minSlots = 16

// slot is the slot of line seq. Until the ring first wraps lines come in order, so a
// missing slot is the next one: the slots double, up to keep (r.mu held).
func (r *Ring) slot(seq uint64) *ringSlot {
	i := int(seq % uint64(r.keep))
	if i >= len(r.slots) {
		grown := make([]ringSlot, min(r.keep, max(minSlots, 2*len(r.slots), i+1)))
		copy(grown, r.slots)
		r.slots = grown
	}
	return &r.slots[i]
}

// Name is the container's name.
func (r *Ring) Name() string { return r.name }

// Resize keeps the last keep lines from now on (a reload changed log.keep_lines);
// the lines it holds stay, as many as fit.
func (r *Ring) Resize(keep int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if keep == r.keep {
		return
	}
	old, oldKeep := r.slots, r.keep
	r.oldest = max(r.oldest, r.next-min(r.next, uint64(keep)))
	r.slots, r.keep, r.budget, r.bytes = nil, keep, keep*BytesPerKeptLine, 0
	if r.next > r.oldest {
		r.slots = make([]ringSlot, keep) // kept lines may sit anywhere in it
	}
	for seq := r.oldest; seq < r.next; seq++ {
		s := old[seq%uint64(oldKeep)]
		r.slots[seq%uint64(keep)] = s
		r.bytes += cap(s.text)
	}
	r.trim()
}

// trim drops the oldest lines while the kept text is over budget, the newest
// excepted (r.mu held).
func (r *Ring) trim() {
	for r.bytes > r.budget && r.next-r.oldest > 1 {
		s := r.slot(r.oldest)
		r.bytes -= cap(s.text)
		s.text = nil
		r.oldest++
	}
}

// add keeps one line (text holds no newline, at most MaxLine bytes).
func (r *Ring) add(stderr bool, text []byte) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keep == 0 {
		return
	}
	s := r.slot(r.next)
	if r.next-r.oldest == uint64(r.keep) {
		r.oldest++ // its slot is taken now (otherwise it is empty)
	}
	r.bytes -= cap(s.text)
	if cap(s.text) > reuseBelow && len(text) < cap(s.text)/2 {
		s.text = nil
	}
	s.nanos, s.stderr = now, stderr
	s.text = append(s.text[:0], text...)
	r.bytes += cap(s.text)
	r.next++
	r.trim()
	r.wakers.Wake()
}

// Next is the number the next line will get.
func (r *Ring) Next() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// Read appends to lines the kept lines numbered from on (oldest first) until they
// hold maxBytes of text (at least one line), so that a reader streams a ring in
// bounded batches rather than copying it whole. It returns them, the number after
// the last, and how many lines from on were no longer kept.
func (r *Ring) Read(lines []Line, from uint64, maxBytes int) ([]Line, uint64, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lost uint64
	if from < r.oldest {
		lost, from = r.oldest-from, r.oldest
	}
	for size := 0; from < r.next && (size == 0 || size+len(r.slot(from).text) <= maxBytes); from++ {
		s := r.slot(from)
		size += max(len(s.text), 1)
		lines = append(lines, Line{Time: time.Unix(0, s.nanos), Container: r.name, Stderr: s.stderr, Line: string(s.text)})
	}
	return lines, from, lost
}

// Times returns the times (Unix nanoseconds) of the kept lines numbered from on and
// the number of the first of them: what a reader needs to merge rings by time
// without copying their text.
func (r *Ring) Times(from uint64) (nanos []int64, first uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from = max(from, r.oldest)
	for seq := from; seq < r.next; seq++ {
		nanos = append(nanos, r.slot(seq).nanos)
	}
	return nanos, from
}

// Watch makes every new line send to wake without blocking (a buffer of one is
// enough); the returned function stops it.
func (r *Ring) Watch(wake chan<- struct{}) (stop func()) { return r.wakers.Watch(wake) }
