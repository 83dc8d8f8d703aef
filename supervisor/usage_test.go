package supervisor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// The readers' side of the sampler: the first read after a quiet spell asks for one
// sample of every container and waits for it; readers that come at the same moment
// wait for that one sample, not one each; a read while the sampler ticks for someone
// asks for nothing; and with no sampler running a read never waits.
func TestFreshUsage(t *testing.T) {
	sv := &Supervisor{log: zerolog.Nop(), usage: newUsageDemand()}
	d := sv.usage

	sv.freshUsage() // no sampler yet: returns at once, and the sampler will read everything
	if d.asked != nil || !d.watched(time.Now()) {
		t.Fatalf("before the sampler: asked %v, watched %v; want no ask, watched", d.asked, d.watched(time.Now()))
	}

	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() { sv.sampleUsage(ctx); close(sampled) }()
	waitRunning(t, d)

	d.mu.Lock()
	d.until = time.Time{} // a quiet spell
	d.mu.Unlock()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); sv.freshUsage() }()
	}
	wg.Wait()
	first := d.asked
	if first == nil {
		t.Fatal("no sample asked for after a quiet spell")
	}
	select {
	case <-first.done:
	default:
		t.Fatal("freshUsage returned before the sample it asked for was taken")
	}
	if n := len(d.asks); n != 0 {
		t.Errorf("%d asks left unserved; want every reader to share the one", n)
	}

	sv.freshUsage() // watched now: no new ask
	if d.asked != first {
		t.Error("a read while watched asked for another sample")
	}

	cancel()
	<-sampled
	d.mu.Lock()
	d.until = time.Time{}
	d.mu.Unlock()
	start := time.Now()
	sv.freshUsage() // the sampler has stopped: nothing to wait for
	if waited := time.Since(start); waited > freshUsageWait/2 {
		t.Errorf("freshUsage waited %v with no sampler running", waited)
	}
}

func waitRunning(t *testing.T, d *usageDemand) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d.mu.Lock()
		running := d.running
		d.mu.Unlock()
		if running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sampler did not start")
		}
		time.Sleep(time.Millisecond) // polling with a deadline: the goroutine starts asynchronously
	}
}
