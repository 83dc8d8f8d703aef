package supervisor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/container"
)

// samplePeriod is how often the usage of the containers sampled is read: status shows
// usage at most 2 s old, and memory_restart counts samples 1 s apart (docs/reference.md "Cgroups and limits").
const samplePeriod = time.Second

// usageWatch is how long after a read of the usage (GET /v1/status, /v1/containers/NAME,
// /metrics, a report) every container is sampled each second. Between such reads only
// the containers with memory_restart are: reading /proc/PID/stat or a cgroup's files
// every second for nobody was the whole of an idle tend's CPU (25 µs a container).
const usageWatch = time.Minute

// freshUsageWait bounds how long a read of the usage waits for the containers' loops
// to take a sample it asked for (they take one within microseconds unless the machine
// is starved); past it the read shows what the loops have.
const freshUsageWait = time.Second

// usageDemand is who wants usage sampled: the readers' side of the sampler.
type usageDemand struct {
	mu      sync.Mutex
	until   time.Time  // every container is sampled until then (usageWatch after a read)
	running bool       // the sampler runs and takes asks
	asked   *sampleAck // the last ask for a sample of every container, done or not
	asks    chan *sampleAck
	stopped chan struct{} // closed when the sampler returns
}

func newUsageDemand() *usageDemand {
	return &usageDemand{asks: make(chan *sampleAck, 1), stopped: make(chan struct{})}
}

// watched reports whether every container is to be sampled at now.
func (d *usageDemand) watched(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return now.Before(d.until)
}

// freshUsage is called before the usage is shown: every container is sampled from now
// on for usageWatch, and when none was sampled every second before, one sample of all
// is taken now and handed to the loops before it returns (at most freshUsageWait), so
// the usage shown is at most 2 s old (docs/reference.md "Cgroups and limits"). Readers that come while that
// sample is under way wait for it too. A CPU % after such a gap is the average over
// the gap.
func (sv *Supervisor) freshUsage() {
	d := sv.usage
	now := time.Now()
	d.mu.Lock()
	if !d.running {
		d.until = now.Add(usageWatch) // the sampler, when it starts, reads every container
		d.mu.Unlock()
		return
	}
	if !now.Before(d.until) {
		ack := newSampleAck()
		select {
		case d.asks <- ack:
			d.asked = ack
		default: // the last ask, a minute ago, is still not taken: wait for that one
		}
	}
	d.until = now.Add(usageWatch)
	ack := d.asked
	d.mu.Unlock()
	if ack == nil {
		return
	}
	timer := time.NewTimer(freshUsageWait)
	defer timer.Stop()
	select {
	case <-ack.done:
	case <-d.stopped:
	case <-timer.C:
	}
}

// sampleUsage is the instance's one usage sampler: every samplePeriod it reads the
// usage of the running containers that are watched (usageDemand) and hands each its
// own, until ctx ends. One goroutine and one timer for the instance, not one per
// container; and without cgroups one pass over /proc for all of them.
func (sv *Supervisor) sampleUsage(ctx context.Context) {
	d := sv.usage
	d.mu.Lock()
	d.running = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.running = false
		d.mu.Unlock()
		close(d.stopped)
	}()
	tick := time.NewTicker(samplePeriod)
	defer tick.Stop()
	u := &usageSampler{procs: cgroup.NewProcSampler("/"), groups: map[int]bool{}}
	defer u.procs.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			sv.sampleOnce(u, now, d.watched(now), nil)
		case ack := <-d.asks:
			sv.sampleOnce(u, time.Now(), true, ack)
		}
	}
}

// usageSampler is what the sampler keeps from one sample to the next, so that a sample
// allocates nothing: garbage made every second would have the collector grow tend's
// heap to its goal (GOGC) for nothing.
type usageSampler struct {
	procs      *cgroup.ProcSampler
	groups     map[int]bool // the process groups read from /proc this sample
	containers []*container.Container
	samples    []readSample
}

// readSample is a sample read, to be handed to its container's loop.
type readSample struct {
	c *container.Container
	s container.Sample
}

// sampleOnce reads and hands out one sample of the running containers: all of them
// when all is set, else those with memory_restart. ack, when not nil, learns when
// every loop has taken its sample.
func (sv *Supervisor) sampleOnce(u *usageSampler, now time.Time, all bool, ack *sampleAck) {
	sv.sampled(u, all)
	clear(u.groups)
	for _, c := range u.containers {
		if pgid, ok := c.ProcGroup(); ok {
			u.groups[pgid] = true
		}
	}
	var procs map[int]cgroup.Usage
	if len(u.groups) > 0 {
		var err error
		if procs, err = u.procs.Read(u.groups); err != nil {
			sv.log.Debug().Err(err).Msg("cannot read usage")
		}
	}
	// Every container is read before any sample is handed out: a loop woken by its
	// sample waits in the run queue while the reads that follow are system calls, and
	// the Go runtime's monitor then hands the sampler's processor to another thread
	// (and keeps polling every 20 µs) — a thread switch per container, on a virtual
	// machine about as dear as the reads. Handed out together, the loops run after.
	for _, c := range u.containers {
		if s, ok := c.ReadUsage(procs, now); ok {
			u.samples = append(u.samples, readSample{c, s})
		}
	}
	for _, r := range u.samples {
		if ack != nil {
			ack.left.Add(1)
			r.s.Taken = ack.taken
		}
		r.c.Sample(r.s)
	}
	if ack != nil {
		ack.taken() // the pass's own count: done once every loop has taken its sample
	}
	clear(u.containers) // holds no container past the sample
	clear(u.samples)
	u.samples = u.samples[:0]
}

// sampled sets u.containers to the running containers a sample reads: all of them
// when all is set, else those with memory_restart.
func (sv *Supervisor) sampled(u *usageSampler, all bool) {
	u.containers = sv.appendCurrent(u.containers[:0])
	if all {
		return
	}
	kept := u.containers[:0]
	for _, c := range u.containers {
		if c.Spec().MemoryRestart.Get() > 0 {
			kept = append(kept, c)
		}
	}
	clear(u.containers[len(kept):])
	u.containers = kept
}

// sampleAck counts the samples of one pass that the loops have yet to take.
type sampleAck struct {
	left atomic.Int32 // starts at 1 for the pass itself
	done chan struct{}
}

func newSampleAck() *sampleAck {
	a := &sampleAck{done: make(chan struct{})}
	a.left.Store(1)
	return a
}

// taken counts one sample taken (or replaced by a newer one); the last closes done.
func (a *sampleAck) taken() {
	if a.left.Add(-1) == 0 {
		close(a.done)
	}
}
