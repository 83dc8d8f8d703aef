package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
)

// RunPolicy runs a notify action or a verify policy: after its initial delay, up to
// max_tries times with the time_limit period between tries, each bounded by
// max_execution_time_ms. args are appended to an exec command (the names of the
// changed resources, seed 001). It returns nil after the first success.
func RunPolicy(ctx context.Context, p *spec.Policy, target probes.Target, args []string) error {
	h := p.Handler
	if h.Exec != nil && len(args) > 0 {
		argv, err := spec.Argv(h.Exec.Command, target.Env)
		if err != nil {
			return fmt.Errorf("bad command: %w", err)
		}
		h.Exec = &spec.Exec{Command: spec.Command{List: append(argv, args...), IsList: true}}
	}
	tl := restart.FromSpec(p.TimeLimit)
	if !restart.Sleep(ctx, tl.InitialDelay) {
		return ctx.Err()
	}
	maxTries := 1
	if p.MaxTries != nil && *p.MaxTries > 1 {
		maxTries = *p.MaxTries
	}
	var last string
	for try, failures := 1, 0; try <= maxTries; try++ {
		res := probes.Check(ctx, h, target, tl.MaxExecution)
		if res.OK {
			return nil
		}
		last = res.Detail
		failures++
		if try < maxTries && !restart.Sleep(ctx, tl.Period(failures)-res.Duration) {
			return ctx.Err()
		}
	}
	if maxTries > 1 {
		return fmt.Errorf("%d tries failed, last: %s", maxTries, last)
	}
	return errors.New(last)
}
