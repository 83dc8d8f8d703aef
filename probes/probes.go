// Package probes answers one question, did this check pass, and schedules checks by
// their time_limit. It knows nothing about restarting: it reports results and leaves
// acting on them to the container.
package probes

import (
	"context"
	"time"

	"github.com/tend-sh/tend/spec"
)

// Result is the outcome of one check.
type Result struct {
	OK       bool
	Detail   string // why it failed ("HTTP 503", "timed out after 1s", "exit code 1"); empty on success
	Duration time.Duration
}

// Target is what a check runs against: the environment and working directory of the
// container, for exec handlers.
type Target struct {
	Env []string
	Dir string
}

// Check runs handler h once, bounded by timeout (0: none): http_get, tcp_socket or
// exec. unix_signal is not a check and is handled by the container.
func Check(ctx context.Context, h spec.Handler, t Target, timeout time.Duration) Result {
	panic("TODO")
}

// Kind tells a liveness probe from a readiness probe.
type Kind int

const (
	Liveness Kind = iota
	Readiness
)

// Event is reported after every check of a running probe.
type Event struct {
	Kind   Kind
	Run    uint64 // the run id given to Start, so late events of an old run can be ignored
	Result Result
	// Healthy is the condition after applying the thresholds: it turns false after
	// failure_threshold consecutive failures and true after success_threshold
	// consecutive successes; it starts false.
	Healthy bool
}

// Start runs probe p in a goroutine until ctx is done: after initial_delay_ms, then
// every time_limit period (step from consecutive successes), each check bounded by
// max_execution_time_ms. Every result is sent to out; sending gives up when ctx is done.
func Start(ctx context.Context, kind Kind, p *spec.Probe, t Target, run uint64, out chan<- Event) {
	panic("TODO")
}
