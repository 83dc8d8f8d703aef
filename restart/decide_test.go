package restart

import (
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// The restart rule as docs/reference.md "Running" and "Restart limits and
// deadlines" tell it: one row per case. Backoff: 1 s doubling up to 8 s, no jitter,
// a run of 10 s or more is stable.
func TestDecide(t *testing.T) {
	backoff := Policy{MinPeriod: time.Second, MaxPeriod: 8 * time.Second, Backoff: 2, StableAfter: 10 * time.Second}
	always := Rules{Mode: spec.ModeAlways, Backoff: backoff}
	onFailure := Rules{Mode: spec.ModeOnFailure, Backoff: backoff}
	never := Rules{Mode: spec.ModeNever, Backoff: backoff}
	always5 := Rules{Mode: spec.ModeAlways, MaxFailures: 5, Backoff: backoff}
	onFailure3 := Rules{Mode: spec.ModeOnFailure, MaxFailures: 3, Backoff: backoff}
	never3 := Rules{Mode: spec.ModeNever, MaxFailures: 3, Backoff: backoff}

	short, stable := time.Second, 10*time.Second
	code0 := Run{Ending: Exited, Success: true, Ran: short}
	code1 := Run{Ending: Exited, Ran: short}
	stableCode0 := Run{Ending: Exited, Success: true, Ran: stable}
	stableCode1 := Run{Ending: Exited, Ran: stable}
	deadline := Run{Ending: DeadlineExceeded, Ran: stable}
	deadline0 := Run{Ending: DeadlineExceeded, Success: true, Ran: stable}
	toRestart := Run{Ending: StoppedToRestart, Ran: short}

	restartAfter := func(d time.Duration, fails int) Decision {
		return Decision{Verdict: Restart, Delay: d, Fails: fails}
	}
	finished := func(fails int) Decision { return Decision{Verdict: Finished, Fails: fails} }
	giveUp := func(fails int) Decision { return Decision{Verdict: GiveUp, Fails: fails} }

	tests := []struct {
		name  string
		rules Rules
		run   Run
		fails int // short runs in a row before this one
		want  Decision
	}{
		// The mode: which exits restart.
		{"always, short exit 0 → restart after min_period", always, code0, 0, restartAfter(time.Second, 1)},
		{"always, short exit 1 → restart after min_period", always, code1, 0, restartAfter(time.Second, 1)},
		{"always, stable exit 0 → restart at once, count reset", always, stableCode0, 4, restartAfter(0, 0)},
		{"always, stable exit 1 → restart at once, count reset", always, stableCode1, 4, restartAfter(0, 0)},
		{"on_failure, exit 0 → finished", onFailure, code0, 0, finished(0)},
		{"on_failure, exit 0 after failures → finished, count kept", onFailure, code0, 2, finished(2)},
		{"on_failure, short exit 1 → restart after min_period", onFailure, code1, 0, restartAfter(time.Second, 1)},
		{"on_failure, stable exit 1 → restart at once", onFailure, stableCode1, 3, restartAfter(0, 0)},
		{"never, exit 0 → finished", never, code0, 0, finished(0)},
		{"never, exit 1 → finished", never, code1, 0, finished(0)},

		// The backoff: min_period × backoff^(fails-1), up to max_period.
		{"always, 2nd short run in a row → 2 s", always, code1, 1, restartAfter(2*time.Second, 2)},
		{"always, 4th short run in a row → 8 s", always, code1, 3, restartAfter(8*time.Second, 4)},
		{"always, 6th short run in a row → max_period 8 s", always, code1, 5, restartAfter(8*time.Second, 6)},

		// max_failures: the n-th short run in a row gives up; a stable one never does.
		{"always, 4th failure within max_failures 5 → restart", always5, code1, 3, restartAfter(8*time.Second, 4)},
		{"always, 5th failure within max_failures 5 → give up", always5, code1, 4, giveUp(5)},
		{"always, 5th short exit 0 within max_failures 5 → give up", always5, code0, 4, giveUp(5)},
		{"always, stable run after 4 failures, max_failures 5 → restart, count reset", always5, stableCode1, 4, restartAfter(0, 0)},
		{"on_failure, 3rd failure, max_failures 3 → give up", onFailure3, code1, 2, giveUp(3)},
		{"on_failure, exit 0 at max_failures 3 → finished", onFailure3, code0, 2, finished(2)},
		{"never, 3rd failure, max_failures 3 → finished (never restarts, never gives up)", never3, code1, 2, finished(2)},
		{"max_failures 0 never gives up", always, code1, 1000, restartAfter(8*time.Second, 1001)},

		// max_run_ms: a run stopped at its deadline is a failure, however long and
		// whatever its code.
		{"always, deadline → failure, restart after min_period", always, deadline, 0, restartAfter(time.Second, 1)},
		{"always, deadline with exit 0 → failure all the same", always, deadline0, 1, restartAfter(2*time.Second, 2)},
		{"on_failure, deadline with exit 0 → failure, restart", onFailure, deadline0, 0, restartAfter(time.Second, 1)},
		{"never, deadline → finished", never, deadline, 0, finished(0)},
		{"always, deadline, 5th failure within max_failures 5 → give up", always5, deadline, 4, giveUp(5)},
		{"on_failure, deadline, 3rd failure, max_failures 3 → give up", onFailure3, deadline0, 2, giveUp(3)},

		// A stop to restart (tend restart, memory_restart): at once, whatever the
		// mode, the backoff forgotten.
		{"always, stopped to restart → restart at once, count reset", always, toRestart, 3, restartAfter(0, 0)},
		{"never, stopped to restart → restart at once", never, toRestart, 0, restartAfter(0, 0)},
		{"max_failures 5 after 4 failures, stopped to restart → restart, never give up", always5, toRestart, 4, restartAfter(0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.rules, tt.run, tt.fails, func() float64 { return 0 })
			if got != tt.want {
				t.Errorf("Decide = {%s, %v, fails %d}, want {%s, %v, fails %d}",
					got.Verdict, got.Delay, got.Fails, tt.want.Verdict, tt.want.Delay, tt.want.Fails)
			}
		})
	}
}

// The jitter is drawn only for a restart after a short run, and the spec's
// restart_policy reads into the same rules.
func TestDecideJitterAndSpec(t *testing.T) {
	p := &spec.RestartPolicy{Mode: spec.ModeAlways, MinPeriodMs: spec.Some[int64](100), MaxPeriodMs: spec.Some[int64](1000),
		Backoff: spec.Some(2.0), MaxJitterMs: spec.Some[int64](100), StableAfterMs: spec.Some[int64](5000), MaxFailures: spec.Some(7)}
	r := RulesFromSpec(p)
	if r.Mode != spec.ModeAlways || r.MaxFailures != 7 || r.Backoff.MinPeriod != 100*time.Millisecond {
		t.Fatalf("RulesFromSpec = %+v", r)
	}
	got := Decide(r, Run{Ending: Exited, Ran: time.Millisecond}, 0, func() float64 { return 0.5 })
	if got.Delay != 150*time.Millisecond {
		t.Errorf("short run with half the jitter: delay %v, want 150ms", got.Delay)
	}
	drawn := false
	Decide(r, Run{Ending: Exited, Ran: time.Minute}, 0, func() float64 { drawn = true; return 0.5 })
	if drawn {
		t.Error("a stable run drew a jitter: it restarts at once")
	}
}

// memory_restart's rule, on injected samples: the third sample in a row above the
// limit fires; one at or below it starts the count again; no limit never fires.
func TestMemoryWatchThreeInARow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int64
		samples []int64
		fires   int // index of the sample that fires, -1: none
	}{
		{"three above", 100, []int64{101, 200, 150}, 2},
		{"two above", 100, []int64{101, 200}, -1},
		{"broken by one at the limit", 100, []int64{101, 101, 100, 101, 101, 101}, 5},
		{"broken by one below", 100, []int64{101, 50, 101, 101}, -1},
		{"no limit", 0, []int64{1 << 40, 1 << 40, 1 << 40}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := MemoryWatch{Limit: tc.limit}
			fired := -1
			for i, b := range tc.samples {
				if m.Observe(b) && fired < 0 {
					fired = i
				}
			}
			if fired != tc.fires {
				t.Errorf("fired at sample %d, want %d", fired, tc.fires)
			}
		})
	}
}

// fake is a container as the instance's rule reads it.
type fake struct {
	name string
	sc   spec.Container
	st   status.Container
}

func (f fake) Name() string             { return f.name }
func (f fake) Spec() *spec.Container    { return &f.sc }
func (f fake) Status() status.Container { return f.st }

// The instance's rule: on_give_up shutdown and job mode's end.
func TestInstance(t *testing.T) {
	exit := func(code int) *status.Exit { return &status.Exit{Code: code} }
	c := func(name, mode string, state status.State, last *status.Exit) fake {
		return fake{name: name, sc: spec.Container{RestartPolicy: &spec.RestartPolicy{Mode: mode}},
			st: status.Container{State: state, LastExit: last}}
	}
	withGiveUp := func(f fake, onGiveUp string) fake { f.sc.RestartPolicy.OnGiveUp = onGiveUp; return f }
	scheduled := func(f fake) fake { f.sc.Schedule = "@hourly"; return f }
	depFailed := func(f fake) fake { f.st.Ready.Reason = status.ReasonDependencyFailed; return f }
	removed := func(f fake) fake { f.st.TargetState = spec.TargetRemoved; return f }
	const (
		always, onFailure, never                     = spec.ModeAlways, spec.ModeOnFailure, spec.ModeNever
		running, completed, failed, stopped, backoff = status.Running, status.Completed, status.Failed, status.Stopped, status.Backoff
	)
	goOn := InstanceEnd{}
	stop := func(code int) InstanceEnd { return InstanceEnd{Stop: true, Code: code} }
	gaveUp := func(name string, code int) InstanceEnd { return InstanceEnd{Stop: true, Code: code, GaveUp: name} }

	tests := []struct {
		name string
		cs   []fake
		want InstanceEnd
	}{
		{"no containers → goes on", nil, goOn},
		{"an always container running → goes on", []fake{c("web", always, running, nil)}, goOn},
		{"an always container completed? never: it is restarted → goes on", []fake{c("web", always, backoff, exit(1))}, goOn},
		{"job: one completed with 0 → stops with 0", []fake{c("job", never, completed, exit(0))}, stop(0)},
		{"job: one completed with 3 → stops with 3", []fake{c("job", onFailure, completed, exit(3))}, stop(3)},
		{"job: one still running → goes on", []fake{c("a", never, completed, exit(0)), c("b", never, running, nil)}, goOn},
		{"job: the first non-zero exit in spec order wins", []fake{c("a", never, completed, exit(0)), c("b", never, completed, exit(4)), c("c", never, completed, exit(5))}, stop(4)},
		{"job: a failed one with exit 0 → 1", []fake{c("a", onFailure, failed, exit(0))}, stop(1)},
		{"job: a failed one that never ran → 1", []fake{c("a", onFailure, failed, nil)}, stop(1)},
		{"job: a failed one with 137 → 137", []fake{c("a", onFailure, failed, exit(137))}, stop(137)},
		{"job: stopped through the API in backoff after exit 3 → 3", []fake{removed(c("a", onFailure, stopped, exit(3)))}, stop(3)},
		{"job: stopped, never ran → 0", []fake{removed(c("a", never, stopped, nil))}, stop(0)},
		{"job: a scheduled container runs again → goes on", []fake{scheduled(c("a", never, completed, exit(0)))}, goOn},
		{"job beside an always container → goes on", []fake{c("a", never, completed, exit(0)), c("web", always, running, nil)}, goOn},
		{"give up with on_give_up shutdown → stops with its code", []fake{c("web", always, running, nil), withGiveUp(c("db", always, failed, exit(2)), spec.GiveUpShutdown)}, gaveUp("db", 2)},
		{"give up with on_give_up stop → goes on", []fake{c("web", always, running, nil), withGiveUp(c("db", always, failed, exit(2)), spec.GiveUpStop)}, goOn},
		{"a dependency failed, on_give_up shutdown → not a give-up", []fake{c("web", always, running, nil), depFailed(withGiveUp(c("db", always, failed, nil), spec.GiveUpShutdown))}, goOn},
		{"give up beats the job's end", []fake{c("a", never, completed, exit(5)), withGiveUp(c("b", onFailure, failed, exit(0)), spec.GiveUpShutdown)}, gaveUp("b", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := make([]Container, len(tt.cs))
			for i := range tt.cs {
				cs[i] = tt.cs[i]
			}
			if got := Instance(cs); got != tt.want {
				t.Errorf("Instance = %+v, want %+v", got, tt.want)
			}
		})
	}
}
