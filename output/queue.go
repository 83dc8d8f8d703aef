package output

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// MaxConsoleQueue bounds the bytes of lines waiting for one of tend's console streams.
const MaxConsoleQueue = 1 << 20

// Queue stands before one of tend's own streams (stdout or stderr) as supervision
// writes to it: Write queues and returns at once, and one goroutine writes the queue out.
// Nobody reading tend's stdout (a pipe that is never drained) must not stall
// liveness kills, restarts or SIGTERM, so when the queue holds MaxConsoleQueue bytes
// the oldest lines are dropped and counted (Dropped). Each Write should hold whole
// lines: what is dropped is whole Writes. Log files and rings do not go through it
// and get every line.
type Queue struct {
	w       io.Writer
	mu      sync.Mutex
	queue   []queueChunk
	size    int           // bytes in queue
	wake    chan struct{} // capacity 1: the queue has something
	dropped atomic.Uint64
}

// queueChunk is one Write, or a Flush's marker (done, no data).
type queueChunk struct {
	data []byte
	done chan struct{}
}

// NewQueue starts writing to w in the background.
func NewQueue(w io.Writer) *Queue {
	c := &Queue{w: w, wake: make(chan struct{}, 1)}
	go c.drain()
	return c
}

// Write queues a copy of p and never blocks on the stream; it never fails.
func (c *Queue) Write(p []byte) (int, error) {
	c.push(queueChunk{data: bytes.Clone(p)})
	return len(p), nil
}

// Flush waits until what was written before it has been written out, or ctx ends
// (a stream nobody reads); it reports whether everything was written.
func (c *Queue) Flush(ctx context.Context) bool {
	done := make(chan struct{})
	c.push(queueChunk{done: done})
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Dropped is how many lines were dropped because the queue was full.
func (c *Queue) Dropped() uint64 { return c.dropped.Load() }

// push appends ch to the queue, dropping the oldest chunks past MaxConsoleQueue
// (always keeping ch itself), and wakes the writer.
func (c *Queue) push(ch queueChunk) {
	c.mu.Lock()
	c.queue = append(c.queue, ch)
	c.size += len(ch.data)
	for c.size > MaxConsoleQueue && len(c.queue) > 1 {
		old := c.queue[0]
		c.queue[0] = queueChunk{}
		c.queue = c.queue[1:]
		c.size -= len(old.data)
		if old.done != nil {
			close(old.done) // that flush will never see its lines written
		}
		c.dropped.Add(uint64(bytes.Count(old.data, []byte{'\n'})))
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// drain writes the queue out, one chunk at a time, for as long as tend runs. A
// chunk being written is no longer in the queue: at most MaxConsoleQueue plus one
// chunk is held.
func (c *Queue) drain() {
	for range c.wake {
		for {
			c.mu.Lock()
			if len(c.queue) == 0 {
				c.queue = nil // let a long queue's array go
				c.mu.Unlock()
				break
			}
			ch := c.queue[0]
			c.queue[0] = queueChunk{}
			c.queue = c.queue[1:]
			c.size -= len(ch.data)
			c.mu.Unlock()
			if ch.done != nil {
				close(ch.done)
				continue
			}
			c.w.Write(ch.data) // nothing to do about a broken stream but go on
		}
	}
}
