package container

import (
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/status"
)

// sample is a sample of l's running process, CPU and memory as given.
func sample(l *loop, at time.Time, cpu float64, mem int64) Sample {
	return Sample{Pid: l.proc.Pid(), At: at, Usage: cgroup.Usage{CPUSeconds: cpu, MemoryBytes: mem, Pids: 1}}
}

// Three samples above memory_restart restart the container through its stop policy:
// last_exit says why, the restart counts, and an event says so. Two do not.
func TestMemoryRestart(t *testing.T) {
	l := newTestLoop(t, "always", "    memory_restart: 1Ki\n")
	into(t, l, stateRunning)
	now := time.Now()
	for i := range 2 {
		l.onSample(sample(l, now.Add(time.Duration(i)*time.Second), 0, 4096))
	}
	if l.state != stateRunning {
		t.Fatalf("after 2 samples above: %s, want running", l.state)
	}
	l.onSample(sample(l, now.Add(2*time.Second), 0, 4096))
	if l.state != stateRestarting {
		t.Fatalf("after 3 samples above: %s, want %s", l.state, stateRestarting)
	}
	settle(t, l)
	if l.state != stateRunning || l.st.Restarts != 1 {
		t.Fatalf("after the stop: %s, restarts %d; want running, 1", l.state, l.st.Restarts)
	}
	if got := l.st.LastExit.Reason; got != status.ExitMemoryRestart {
		t.Errorf("last_exit.reason = %q, want %q", got, status.ExitMemoryRestart)
	}
	if !hasEvent(l, status.Warning, status.ReasonMemoryRestart) {
		t.Errorf("no MemoryRestart warning in %+v", l.events)
	}
}

// A sample of an earlier run (another pid) counts for nothing.
func TestMemoryRestartIgnoresOtherRuns(t *testing.T) {
	l := newTestLoop(t, "always", "    memory_restart: 1Ki\n")
	into(t, l, stateRunning)
	for range 5 {
		s := sample(l, time.Now(), 0, 4096)
		s.Pid++
		l.onSample(s)
	}
	if l.state != stateRunning || l.c.Status().Usage.MemoryBytes != 0 {
		t.Fatalf("state %s, usage %+v; want running and nothing taken", l.state, l.c.Status().Usage)
	}
}

// An exit by SIGKILL while the group's OOM kills grew is named OOMKilled, with an
// OOMKilled warning, and restarts by the policy; a SIGKILL without it is not.
func TestOOMKilledNamed(t *testing.T) {
	for _, oom := range []bool{true, false} {
		l := newTestLoop(t, "always", "")
		into(t, l, stateRunning)
		if oom {
			l.c.exitOOMs.Store(l.usage.base.OOMKills + 1) // as Container.exited reads it
		}
		exitNow(t, l) // SIGKILL
		named := l.st.LastExit.Reason == status.ExitOOMKilled
		if named != oom || hasEvent(l, status.Warning, status.ReasonOOMKilled) != oom {
			t.Errorf("OOM kill %v: last_exit %+v, events %+v", oom, l.st.LastExit, l.events)
		}
		if l.state != stateBackoff {
			t.Errorf("OOM kill %v: %s, want backoff (restart_policy always)", oom, l.state)
		}
		if got := l.c.Status().Usage.OOMKills; got != map[bool]int64{true: 1, false: 0}[oom] {
			t.Errorf("OOM kill %v: oom_kills = %d", oom, got)
		}
	}
}

// The run's CPU is the group's minus what it had at the start; CPU % is the difference
// of two samples over the time between them.
func TestUsageOfTheRun(t *testing.T) {
	l := newTestLoop(t, "always", "")
	into(t, l, stateRunning)
	start := l.usage.last.At
	l.usage.base.CPUSeconds, l.usage.last.Usage.CPUSeconds = 10, 10 // earlier runs' CPU
	l.onSample(sample(l, start.Add(time.Second), 10.5, 50<<20))
	l.onSample(sample(l, start.Add(3*time.Second), 11.5, 60<<20))
	u := l.c.Status().Usage
	if u.CPUSeconds != 1.5 || u.CPUPercent != 50 || u.MemoryBytes != 60<<20 || u.Pids != 1 {
		t.Errorf("usage %+v; want 1.5 s, 50 %%, 60Mi, 1 pid", u)
	}
	_ = l.proc.SignalGroup(syscall.SIGKILL)
	<-l.procDone
	l.onExit()
	if u := l.c.Status().Usage; u.MemoryBytes != 0 || u.Pids != 0 || u.CPUSeconds != 1.5 {
		t.Errorf("after the exit: %+v; want no memory, no pids, the run's CPU", u)
	}
}

func hasEvent(l *loop, typ status.EventType, reason status.Reason) bool {
	for _, e := range l.events {
		if e.Type == typ && e.Reason == reason {
			return true
		}
	}
	return false
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1023: "1023", 1024: "1.0Ki", 12_900_000: "12.3Mi", 3 << 30: "3.0Gi"} {
		if got := status.HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A sample the loop has not taken yet is replaced by the next: the loop sees the
// newest, announced once, and the sampler never blocks. A replaced sample counts as
// taken for whoever waits on it, and a sample is taken once.
func TestSampleNewestWins(t *testing.T) {
	c := &Container{sampled: make(chan struct{}, 1)}
	t0 := time.Now()
	var taken1, taken2 int
	c.Sample(Sample{Pid: 7, At: t0, Taken: func() { taken1++ }})
	c.Sample(Sample{Pid: 7, At: t0.Add(time.Second), Taken: func() { taken2++ }})
	if taken1 != 1 || taken2 != 0 {
		t.Errorf("after the second sample: first taken %d times, second %d; want 1, 0", taken1, taken2)
	}
	select {
	case <-c.sampled:
	default:
		t.Fatal("no sample announced")
	}
	s, ok := c.takeSample()
	if !ok || !s.At.Equal(t0.Add(time.Second)) {
		t.Errorf("the loop took the sample of %v (%v); want the newest, %v", s.At, ok, t0.Add(time.Second))
	}
	select {
	case <-c.sampled:
		t.Error("two samples announced twice; want once")
	default:
	}
	if _, ok := c.takeSample(); ok {
		t.Error("the same sample taken twice")
	}
}
