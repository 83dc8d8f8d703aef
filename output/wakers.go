package output

import (
	"slices"
	"sync"
)

// Wakers are the channels of readers waiting for something new (a log line, a new
// ring). Wake sends to each without blocking: a buffer of one is enough, and a
// writer never waits for a reader. Safe for concurrent use.
type Wakers struct {
	mu   sync.Mutex
	list []chan<- struct{}
}

// Watch adds wake; the returned function removes it.
func (w *Wakers) Watch(wake chan<- struct{}) (stop func()) {
	w.mu.Lock()
	w.list = append(w.list, wake)
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.list = slices.DeleteFunc(w.list, func(c chan<- struct{}) bool { return c == wake })
	}
}

// Wake wakes every watcher that is not already woken.
func (w *Wakers) Wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.list {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}
