package output

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestQueueNeverBlocks: with nobody reading the stream, writes return at once; the
// oldest lines are dropped and counted, and what is queued stays bounded.
func TestQueueNeverBlocks(t *testing.T) {
	r, w := io.Pipe() // nobody reads r: every write to w blocks
	defer r.Close()
	c := NewQueue(w)
	line := []byte(strings.Repeat("x", 99) + "\n")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50000 { // 5 MB, five times the queue
			c.Write(line)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked on a stream nobody reads")
	}
	// 50000 lines: one is blocked in the pipe, at most MaxConsoleQueue bytes queued.
	if got, least := c.Dropped(), uint64(50000-1-MaxConsoleQueue/100); got < least {
		t.Errorf("Dropped = %d, want at least %d", got, least)
	}
	c.mu.Lock()
	size := c.size
	c.mu.Unlock()
	if size > MaxConsoleQueue {
		t.Errorf("queued %d bytes, want at most %d", size, MaxConsoleQueue)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if c.Flush(ctx) {
		t.Error("Flush of a stream nobody reads = true, want false after its deadline")
	}
}

// TestQueueKeepsOrder: a stream that keeps up gets every line, in order, and Flush
// returns once they are written.
func TestQueueKeepsOrder(t *testing.T) {
	var out bytes.Buffer
	c := NewQueue(&out)
	var want strings.Builder
	for i := range 1000 {
		fmt.Fprintf(c, "line %d\n", i)
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if !c.Flush(context.Background()) {
		t.Fatal("Flush = false")
	}
	if out.String() != want.String() || c.Dropped() != 0 {
		t.Errorf("got %d bytes, dropped %d; want the %d bytes written, none dropped", out.Len(), c.Dropped(), want.Len())
	}
}
