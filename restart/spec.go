package restart

import "github.com/tend-sh/tend/spec"

// FromSpec converts a spec time_limit, defaulted by spec.Load (every field set), into
// durations.
func FromSpec(t *spec.TimeLimit) TimeLimit {
	return TimeLimit{
		InitialDelay: spec.Ms(t.InitialDelayMs),
		MinPeriod:    spec.Ms(t.MinRestartPeriodMs),
		MaxPeriod:    spec.Ms(t.MaxRestartPeriodMs),
		Scale:        spec.Ms(t.RestartPeriodScaleMs),
		BackOff:      t.RestartPeriodBackOff.Get(),
		MaxExecution: spec.Ms(t.MaxExecutionTimeMs),
	}
}

// PolicyFromSpec converts a restart_policy, defaulted by spec.Load, into durations.
func PolicyFromSpec(p *spec.RestartPolicy) Policy {
	return Policy{
		MinPeriod:   spec.Ms(p.MinPeriodMs),
		MaxPeriod:   spec.Ms(p.MaxPeriodMs),
		Backoff:     p.Backoff.Get(),
		MaxJitter:   spec.Ms(p.MaxJitterMs),
		StableAfter: spec.Ms(p.StableAfterMs),
	}
}
