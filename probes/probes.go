// Package probes answers one question, did this check pass, and schedules checks by
// their time_limit. It knows nothing about restarting: it reports results and leaves
// acting on them to the container.
package probes

import (
	"context"
	"sync"
	"time"

	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
)

// Result is the outcome of one check.
type Result struct {
	OK     bool
	Detail string // why it failed ("HTTP 503", "timed out after 1s", "exit code 1"); empty on success
	// Said is what an HTTP server answered with a failing status: the start of its
	// body (MaxSaid bytes at most) as one line; empty otherwise. An exec's last line
	// and a connect error are in Detail already.
	Said     string
	Duration time.Duration
}

// Message is what a check saw, for a container's events and probe results: its
// detail and what the server said. It never holds a request header: tokens in a
// probe's headers stay out.
func (r Result) Message() string {
	if r.Said == "" {
		return r.Detail
	}
	return r.Detail + ": " + r.Said
}

// Target is what a check runs against: the environment and working directory of the
// container, for exec handlers, and its name, for metrics labels.
type Target struct {
	Container string
	Env       []string
	Dir       string
	Ident     *spec.Identity // who exec handlers run as; nil: tend's user
	// Cgroup is the container's cgroup, where exec handlers start (docs/reference.md "Cgroups and limits": every
	// process of a container is in it); nil: tend's own.
	Cgroup *proc.Cgroup
}

// Kind tells a liveness, readiness and startup probe apart.
type Kind int

const (
	Liveness Kind = iota
	Readiness
	Startup
)

// String is the kind as it appears in spec fields and metrics labels.
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "liveness"
	case Startup:
		return "startup"
	}
	return "readiness"
}

// Polled reports whether p is checked by Start (http_get, tcp_socket, exec), not by
// a signal of the process itself (notify, log_line).
func Polled(p *spec.Probe) bool {
	return p != nil && p.Notify == nil && !p.LogLine.IsSet()
}

// Event is reported after every check of a running probe.
type Event struct {
	Kind   Kind
	Run    uint64 // the run id given to Start, so late events of an old run can be ignored
	Result Result
	// Healthy is the condition after applying the thresholds: it turns false after
	// failure_threshold consecutive failures and true after success_threshold
	// consecutive successes; it starts false.
	Healthy bool
	// Failed reports that the last failure_threshold checks (or more) all failed. It
	// differs from !Healthy before the first success: a liveness probe that has not
	// passed yet is not healthy, but only a Failed one is a reason to kill.
	Failed bool
	// Successes and Failures are the consecutive counts after this check; one of
	// them is always 0.
	Successes int
	Failures  int
}

// Start runs probe p until ctx is done: after initial_delay_ms, then every
// time_limit period (step from consecutive successes), each check bounded by
// max_execution_time_ms. Every result is sent to out, except a passed check while the
// last event sent already said passed and healthy (news); sending gives up when ctx
// is done.
// Every check counted is also recorded in hist (nil: none).
// p must be defaulted (spec.Load): its time_limit and thresholds are set.
// Between checks a probe is only a timer: each check runs in a goroutine of its own,
// so two hundred idle probes hold no stacks. The returned channel is closed once the
// probe has ended, which is soon after ctx is done: an in-flight check is cancelled
// (an exec check's process group killed) and its result is not sent.
func Start(ctx context.Context, kind Kind, p *spec.Probe, t Target, run uint64, out chan<- Event, hist *History) <-chan struct{} {
	s := newSchedule(ctx, kind, p, t, run, out)
	s.history = hist
	s.mu.Lock() // the timer may fire before it is stored
	s.due = time.Since(epoch) + s.limit.InitialDelay
	s.timer = time.AfterFunc(s.limit.InitialDelay, s.tick)
	s.mu.Unlock()
	context.AfterFunc(ctx, s.cancel)
	return s.done
}

// newSchedule is probe p's schedule before its timer is set.
func newSchedule(ctx context.Context, kind Kind, p *spec.Probe, t Target, run uint64, out chan<- Event) *schedule {
	return &schedule{
		kind:             kind,
		handler:          p.Handler,
		limit:            restart.FromSpec(p.TimeLimit),
		failureThreshold: p.FailureThreshold.Get(), // defaulted and at least 1 (spec)
		successThreshold: p.SuccessThreshold.Get(),
		target:           t,
		run:              run,
		metrics:          metricsFor(t.Container, kind),
		ctx:              ctx,
		out:              out,
		done:             make(chan struct{}),
		// An exec check costs a fork and an exec, far more than a wake-up: aligning
		// those would only make every container's check fork at the same moment.
		aligned: p.Handler.Exec == nil,
	}
}

// schedule is one running probe: its settings, its timer and its counters. The
// counters and the connection belong to the check in progress (checks never overlap:
// the timer is set again only when one ends).
type schedule struct {
	kind             Kind
	handler          spec.Handler
	limit            restart.TimeLimit
	failureThreshold int
	successThreshold int
	target           Target
	run              uint64
	metrics          probeMetrics
	history          *History
	ctx              context.Context
	out              chan<- Event
	done             chan struct{} // closed by end
	aligned          bool          // checks are due on the shared grid (next)

	mu       sync.Mutex
	timer    *time.Timer
	checking bool // a check runs: it ends the probe itself if ctx is done meanwhile
	ended    bool

	due                 time.Duration // when the next (or running) check is due, from epoch
	successes, failures int
	healthy             bool
	conn                session // the HTTP connection kept between checks
	last                Event   // the last event sent
	sent                bool    // whether last is set
}

// news reports whether ev is worth sending: everything but a passed check of a
// healthy probe whose last event was the same. That is nearly every check of a
// running instance, and its event would change nothing but cost a hand-off to the
// container's goroutine (metrics count every check regardless).
func (s *schedule) news(ev Event) bool {
	same := s.sent && s.last.Result.OK && s.last.Healthy && ev.Result.OK && ev.Healthy
	return !same
}

// cancel ends the probe when ctx is done, unless a check is running: that check
// sees ctx done when it returns and ends the probe then.
func (s *schedule) cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.checking && !s.ended {
		s.timer.Stop()
		s.end()
	}
}

// end closes the kept connection and reports the probe ended; s.mu is held.
func (s *schedule) end() {
	s.ended = true
	s.conn.close()
	close(s.done)
}

// tick runs one check when the timer fires, reports it, and sets the timer for the
// next one: the period is measured from the start of one check to the start of the
// next, the start being when the check was due (the timer's own latency is not added
// to every period).
func (s *schedule) tick() {
	s.mu.Lock()
	if s.ended || s.ctx.Err() != nil {
		s.mu.Unlock()
		return // cancel has ended it, or is about to
	}
	s.checking = true
	s.mu.Unlock()

	s.report(check(s.ctx, s.handler, s.target, s.limit.MaxExecution, &s.conn, probeCheck))
	// Counters are updated first, then the period is computed from them
	// (docs/reference.md "Fields and defaults"); a check that outlasted its period is followed at once.
	now := time.Since(epoch)
	period := s.limit.Period(s.successes)
	var step time.Duration
	if s.aligned {
		step = slack(period)
	}
	s.due = next(s.due, period, step, now)
	wait := s.due - now
	if wait > keepIdle {
		s.conn.close() // the server would likely close it first
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.checking = false
	if s.ctx.Err() != nil {
		s.end()
		return
	}
	s.timer.Reset(wait)
}

// report counts and records the result of a check, and sends its event if it is
// news. A check cancelled midway says nothing about the target: not counted, not
// sent. (A method of its own, so that its locals are not on the stack of every check
// waiting for its answer: see checkHTTP.)
func (s *schedule) report(result Result) {
	if s.ctx.Err() != nil {
		return
	}
	s.metrics.record(result)
	s.history.add(time.Now(), result)
	if ev := s.apply(result); s.news(ev) {
		select {
		case s.out <- ev:
			s.last, s.sent = ev, true
		case <-s.ctx.Done():
		}
	}
}

// apply counts result against the thresholds and returns the event to report.
func (s *schedule) apply(result Result) Event {
	if result.OK {
		s.successes++
		s.failures = 0
		if s.successes >= s.successThreshold {
			s.healthy = true
		}
	} else {
		s.failures++
		s.successes = 0
		if s.failures >= s.failureThreshold {
			s.healthy = false
		}
	}
	return Event{
		Kind:      s.kind,
		Run:       s.run,
		Result:    result,
		Healthy:   s.healthy,
		Failed:    s.failures >= s.failureThreshold,
		Successes: s.successes,
		Failures:  s.failures,
	}
}

// epoch is where the grid of next starts; every probe shares it.
var epoch = time.Now()

// grids are the steps checks are aligned to, largest first. Each divides the one
// before it, so checks of different periods still meet, and the largest divide
// the periods people write (100 ms, 250 ms, 1 s, 5 s, 1 min), which then stay exact.
var grids = []time.Duration{40 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond, 5 * time.Millisecond, time.Millisecond}

// slack is the grid step for a period: the largest of grids up to 1/16 of the
// period, none for periods under 16 ms. It is timer slack, as systemd's AccuracySec.
func slack(period time.Duration) time.Duration {
	for _, g := range grids {
		if g <= period/16 {
			return g
		}
	}
	return 0
}

// next is when the check after one that was due at due is due, all counted from
// epoch: a period later, rounded up to a multiple of step (slack of the period; 0:
// not rounded), or now if that has passed (the check outlasted its period). HTTP and
// TCP checks due within the same step then start together, and one wake-up of tend
// serves them all: at 200 checks a second that halves tend's CPU, since a wake-up
// costs about as much as such a check. A check is never early, and at most one step
// (1/16 of the period, 40 ms) late; a period that is a multiple of its step is kept
// exactly.
func next(due, period, step, now time.Duration) time.Duration {
	t := due + period
	if step > 0 {
		t = (t + step - 1) / step * step
	}
	return max(t, now)
}
