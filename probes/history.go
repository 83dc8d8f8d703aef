package probes

import (
	"sync"
	"time"
)

// HistoryLen is how many checks a History keeps.
const HistoryLen = 10

// Record is one check of a probe as its History keeps it.
type Record struct {
	At     time.Time // when the check ended
	Result Result
}

// History keeps a probe's last HistoryLen checks for people to read (GET
// /v1/containers/NAME): a container makes one per probe and hands it to every
// Start, so it outlives the runs and still says why the last one was killed. The
// checks write it from their own goroutines under its mutex rather than through the
// container's loop: handing every passing check to the loop is the very cost that
// news avoids. A fixed array: recording a passing check allocates nothing.
type History struct {
	mu   sync.Mutex
	n    int // checks recorded, ever
	last [HistoryLen]Record
}

// add records the result of a check that ended at at.
func (h *History) add(at time.Time, r Result) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.last[h.n%HistoryLen] = Record{At: at, Result: r}
	h.n++
	h.mu.Unlock()
}

// Last returns the checks kept, oldest first.
func (h *History) Last() []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := min(h.n, HistoryLen)
	out := make([]Record, 0, k)
	for i := h.n - k; i < h.n; i++ {
		out = append(out, h.last[i%HistoryLen])
	}
	return out
}
