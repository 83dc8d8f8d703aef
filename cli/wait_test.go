package cli

import (
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// controlDone: when a restart, start or stop is done, and what it waits for meanwhile.
func TestControlDone(t *testing.T) {
	t0 := status.Ptr(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC))
	t1 := status.Ptr(t0.Add(time.Second))
	ready := status.Condition{Status: "True", Reason: status.ReasonReady}
	notReady := status.Condition{Status: "False", Reason: status.ReasonNotProbed, Message: "readiness probe has not succeeded yet"}
	running := status.Container{Name: "web", State: status.Running, StartedAt: t0, Ready: ready}
	with := func(c status.Container, f func(*status.Container)) status.Container { f(&c); return c }
	tests := []struct {
		name         string
		verb         string
		before, now  status.Container
		done         bool
		waiting, err string
	}{
		{name: "restart: the old run still shows → waits to start", verb: "restart", before: running, now: running,
			waiting: "web to start (now running)"},
		{name: "restart: stopping → waits to start", verb: "restart", before: running,
			now:     with(running, func(c *status.Container) { c.State = status.Stopping; c.StopStep = "term" }),
			waiting: "web to start (now stopping)"},
		{name: "restart: a new run, not ready → waits for ready", verb: "restart", before: running,
			now:     with(running, func(c *status.Container) { c.StartedAt, c.Restarts, c.Ready = t1, 1, notReady }),
			waiting: "web to be ready (ready False: readiness probe has not succeeded yet)"},
		{name: "restart: a new run, ready → done", verb: "restart", before: running,
			now: with(running, func(c *status.Container) { c.StartedAt, c.Restarts = t1, 1 }), done: true},
		{name: "restart: the new run crashed → waits in backoff", verb: "restart", before: running,
			now: with(running, func(c *status.Container) {
				c.State, c.StartedAt, c.Restarts, c.LastExit = status.Backoff, t1, 1, &status.Exit{Reason: "exit code 3"}
			}), waiting: "web to start again (backoff after exit code 3)"},
		{name: "restart: the new run gave up → fails", verb: "restart", before: running,
			now: with(running, func(c *status.Container) {
				c.State, c.StartedAt, c.Restarts = status.Failed, t1, 1
				c.Ready = status.Condition{Status: "False", Reason: status.ReasonRestartLimit, Message: "gave up after 3 failures"}
			}), err: "web failed: gave up after 3 failures"},
		{name: "start: running already and ready → done", verb: "start", before: running, now: running, done: true},
		{name: "start: stopped → waits to start", verb: "start",
			before:  with(running, func(c *status.Container) { c.State = status.Stopped }),
			now:     with(running, func(c *status.Container) { c.State = status.Stopped }),
			waiting: "web to start (now stopped)"},
		{name: "start: waits for its depends_on", verb: "start",
			before:  with(running, func(c *status.Container) { c.State = status.Stopped }),
			now:     with(running, func(c *status.Container) { c.State, c.WaitingFor = status.Waiting, []string{"db: ready"} }),
			waiting: "web to start (now waiting, waiting for db: ready)"},
		{name: "start: a scheduled run that ended → done", verb: "start",
			before: status.Container{Name: "job", State: status.Waiting},
			now:    status.Container{Name: "job", State: status.Waiting, StartedAt: t1}, done: true},
		{name: "start: a one-off run that completed → done", verb: "start",
			before: status.Container{Name: "job", State: status.Completed, StartedAt: t0},
			now:    status.Container{Name: "job", State: status.Completed, StartedAt: t1}, done: true},
		{name: "stop: running → waits", verb: "stop", before: running, now: running, waiting: "web to stop (now running)"},
		{name: "stop: stopping → waits, naming the step", verb: "stop", before: running,
			now:     with(running, func(c *status.Container) { c.State, c.StopStep = status.Stopping, "term" }),
			waiting: "web to stop (now stopping/term)"},
		{name: "stop: stopped → done", verb: "stop", before: running,
			now: with(running, func(c *status.Container) { c.State = status.Stopped }), done: true},
		{name: "stop: completed → done", verb: "stop", before: running,
			now: with(running, func(c *status.Container) { c.State = status.Completed }), done: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, waiting, err := controlDone(tt.verb, tt.before, tt.now)
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			if done != tt.done || waiting != tt.waiting || errText != tt.err {
				t.Errorf("got done %v, waiting %q, err %q; want %v, %q, %q", done, waiting, errText, tt.done, tt.waiting, tt.err)
			}
		})
	}
}
