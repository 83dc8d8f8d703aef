package restart

import "github.com/tend-sh/tend/spec"

// FromSpec converts a defaulted spec time_limit (nil: all zero) into durations.
func FromSpec(t *spec.TimeLimit) TimeLimit {
	if t == nil {
		return TimeLimit{BackOff: 1}
	}
	backOff := 1.0
	if t.RestartPeriodBackOff != nil {
		backOff = *t.RestartPeriodBackOff
	}
	return TimeLimit{
		InitialDelay: spec.Ms(t.InitialDelayMs),
		MinPeriod:    spec.Ms(t.MinRestartPeriodMs),
		MaxPeriod:    spec.Ms(t.MaxRestartPeriodMs),
		Scale:        spec.Ms(t.RestartPeriodScaleMs),
		BackOff:      backOff,
		MaxExecution: spec.Ms(t.MaxExecutionTimeMs),
	}
}

// PolicyFromSpec converts a defaulted spec restart_policy into durations.
func PolicyFromSpec(p *spec.RestartPolicy) Policy {
	backoff := 1.0
	if p.Backoff != nil {
		backoff = *p.Backoff
	}
	return Policy{
		MinPeriod:   spec.Ms(p.MinPeriodMs),
		MaxPeriod:   spec.Ms(p.MaxPeriodMs),
		Backoff:     backoff,
		MaxJitter:   spec.Ms(p.MaxJitterMs),
		StableAfter: spec.Ms(p.StableAfterMs),
	}
}
