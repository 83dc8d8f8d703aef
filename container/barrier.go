package container

import "sync"

// Barrier is the TERM barrier of one stop operation (docs/reference.md "Stop sequence"): containers
// with term_barrier WAIT receive SIGTERM only after every other container stopped in
// the same operation has reached its own TERM. Only IGNORE containers are counted, so
// several WAIT containers never wait for each other, and a WAIT container alone
// proceeds at once.
type Barrier struct {
	mu      sync.Mutex
	pending int
	open    chan struct{}
}

// NewBarrier returns a barrier that opens once arrivals containers have arrived.
func NewBarrier(arrivals int) *Barrier {
	b := &Barrier{pending: arrivals, open: make(chan struct{})}
	if arrivals <= 0 {
		close(b.open)
	}
	return b
}

// Arrive records that one IGNORE container has reached its TERM (or will never send
// one because it was not running). Extra arrivals are ignored.
func (b *Barrier) Arrive() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending <= 0 {
		return
	}
	b.pending--
	if b.pending == 0 {
		close(b.open)
	}
}

// Open is closed when every counted container has arrived. A nil barrier is open.
func (b *Barrier) Open() <-chan struct{} {
	if b == nil {
		return closedChan
	}
	return b.open
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
