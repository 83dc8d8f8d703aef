package probes

import (
	"context"
	"time"

	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
)

// RunPolicy runs handler h by restart.Retry: up to maxTries checks, tl's period apart,
// until one passes, each bounded by tl.MaxExecution. wait sleeps between tries and
// reports whether to go on (nil: sleep unless ctx is done); onTry (nil: none) sees
// every result, for logs and status. It returns the last result.
func RunPolicy(ctx context.Context, h spec.Handler, t Target, tl restart.TimeLimit, maxTries int,
	wait func(time.Duration) bool, onTry func(try int, r Result)) Result {
	if wait == nil {
		wait = func(d time.Duration) bool { return restart.Sleep(ctx, d) }
	}
	var last Result
	restart.Retry(tl, maxTries, wait, func(try int) bool {
		last = Check(ctx, h, t, tl.MaxExecution)
		if onTry != nil {
			onTry(try, last)
		}
		return last.OK
	})
	return last
}
