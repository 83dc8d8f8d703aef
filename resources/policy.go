package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
)

// RunPolicy runs a notify action or a verify policy by the one policy runner
// (probes.RunPolicy): after its initial delay, up to max_tries times with the
// time_limit period between tries, each bounded by max_execution_time_ms. args are
// appended to an exec command (the names of the changed resources). It returns nil
// after the first success.
func RunPolicy(ctx context.Context, p *spec.Policy, target probes.Target, args []string) error {
	h := p.Handler
	if h.Exec != nil && len(args) > 0 {
		argv, err := spec.Argv(h.Exec.Command, target.Env)
		if err != nil {
			return fmt.Errorf("bad command: %w", err)
		}
		h.Exec = &spec.Exec{Command: spec.Command{List: append(argv, args...), IsList: true}}
	}
	maxTries := max(1, p.MaxTries.Get()) // defaulted and validated by spec
	tries := 0
	res := probes.RunPolicy(ctx, h, target, restart.FromSpec(p.TimeLimit), maxTries, nil,
		func(int, probes.Result) { tries++ })
	switch {
	case res.OK:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case tries > 1:
		return fmt.Errorf("%d tries failed, last: %s", tries, res.Detail)
	}
	return errors.New(res.Detail)
}
