package spec

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Timing is tend's shorthand for the common time_limit: `period: 2s` instead of
// `time_limit: {min_restart_period_ms: 2000, max_restart_period_ms: 2000}`. Every
// place that takes a time_limit takes it, exclusive with time_limit. The decoder
// turns it into the TimeLimit it means and clears it, so defaults, validation,
// consumers and render see only time_limit (render is the canonical form).
type Timing struct {
	// Period sets min_restart_period_ms and max_restart_period_ms to one value: a fixed period.
	Period Opt[string] `yaml:"period,omitempty" json:"period,omitzero"`
	// InitialDelay is initial_delay_ms.
	InitialDelay Opt[string] `yaml:"initial_delay,omitempty" json:"initial_delay,omitzero"`
	// Timeout is max_execution_time_ms.
	Timeout Opt[string] `yaml:"timeout,omitempty" json:"timeout,omitzero"`
}

// expandTimings replaces the shorthand of every struct that has one by its
// time_limit, recording bad durations and shorthand mixed with time_limit in c.
func expandTimings(s *Spec, c *collector) {
	for i := range s.DynamicResources {
		if v := s.DynamicResources[i].Verify; v != nil {
			expandTiming(join(index("dynamic_resources", i), "verify"), &v.Timing, &v.TimeLimit, c)
		}
	}
	for i := range s.InitContainers {
		ic := &s.InitContainers[i]
		expandTiming(index("init_containers", i), &ic.Timing, &ic.TimeLimit, c)
	}
	for i := range s.Containers {
		ct := &s.Containers[i]
		path := index("containers", i)
		for j := range ct.Init {
			expandTiming(index(join(path, "init"), j), &ct.Init[j].Timing, &ct.Init[j].TimeLimit, c)
		}
		for _, p := range []struct {
			field string
			p     *Probe
		}{{"liveness_probe", ct.LivenessProbe}, {"readiness_probe", ct.ReadinessProbe}, {"startup_probe", ct.StartupProbe}} {
			if p.p != nil {
				expandTiming(join(path, p.field), &p.p.Timing, &p.p.TimeLimit, c)
			}
		}
		if sp := ct.StopPolicy; sp != nil {
			expandTiming(join(path, "stop_policy"), &sp.Timing, &sp.TimeLimit, c)
		}
		if dp := ct.DestroyPolicy; dp != nil {
			expandTiming(join(path, "destroy_policy"), &dp.Timing, &dp.TimeLimit, c)
		}
		for j := range ct.NotifyActions {
			na := &ct.NotifyActions[j]
			expandTiming(index(join(path, "notify_actions"), j), &na.Timing, &na.TimeLimit, c)
		}
	}
}

// expandTiming sets *tl from the shorthand t of the struct at path and clears t.
func expandTiming(path string, t *Timing, tl **TimeLimit, c *collector) {
	fields := []struct {
		name string
		v    Opt[string]
	}{{"period", t.Period}, {"initial_delay", t.InitialDelay}, {"timeout", t.Timeout}}
	*t = Timing{}
	first := ""
	for _, f := range fields {
		if f.v.IsSet() {
			first = f.name
			break
		}
	}
	switch {
	case first == "":
		return
	case *tl != nil:
		c.addf(join(path, first), "%s and time_limit (line %d) exclude each other: write period, initial_delay and timeout, or time_limit alone",
			first, c.lineOf(join(path, "time_limit")))
		return
	}
	out := &TimeLimit{}
	if ms, ok := durationMs(c, join(path, "period"), fields[0].v); ok {
		out.MinRestartPeriodMs, out.MaxRestartPeriodMs = ms, ms
	}
	out.InitialDelayMs, _ = durationMs(c, join(path, "initial_delay"), fields[1].v)
	out.MaxExecutionTimeMs, _ = durationMs(c, join(path, "timeout"), fields[2].v)
	*tl = out
}

// durationMs is the Go duration o (unset: unset) in milliseconds. A negative
// duration, or one that is not a whole number of milliseconds, is an error: every
// timing of tend is in milliseconds, and rounding 1500us either way would run at
// a pace the spec does not say.
func durationMs(c *collector, path string, o Opt[string]) (Opt[int64], bool) {
	if !o.IsSet() {
		return Opt[int64]{}, true
	}
	d, err := time.ParseDuration(o.Get())
	switch {
	case err != nil && isNumber(o.Get()):
		c.addf(path, "must be a duration with a unit, such as %ss or %sms, got %s", o.Get(), o.Get(), o.Get())
	case err != nil:
		c.addf(path, "must be a duration such as 2s, 500ms or 1m30s, got %q", o.Get())
	case d < 0:
		c.addf(path, "must not be negative, got %s", o.Get())
	case d%time.Millisecond != 0:
		c.addf(path, "must be a whole number of milliseconds, got %s", o.Get())
	default:
		return Some(d.Milliseconds()), true
	}
	return Opt[int64]{}, false
}

// isNumber tells a bare number (period: 2), which needs only a unit, from other text.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// kubernetesTimings are Kubernetes' probe timing fields (lower case, without
// underscores) and the shorthand fields that say the same, with an example value.
var kubernetesTimings = map[string]struct{ field, example string }{
	"periodseconds":       {"period", "10s"},
	"initialdelayseconds": {"initial_delay", "5s"},
	"timeoutseconds":      {"timeout", "1s"},
}

// kubernetesHint is the "did you mean" for a Kubernetes timing field (periodSeconds,
// period_seconds) where the shorthand is a field, with the document's number of
// seconds as the example: periodSeconds: 3 gives "(did you mean period? e.g. period: 3s)".
func kubernetesHint(key string, value *yaml.Node, fields map[string]reflect.Type) string {
	k, ok := kubernetesTimings[strings.ToLower(strings.ReplaceAll(key, "_", ""))]
	if _, takes := fields[k.field]; !ok || !takes {
		return ""
	}
	example := k.example
	if value.Kind == yaml.ScalarNode && value.ShortTag() == "!!int" && !strings.HasPrefix(value.Value, "-") {
		example = value.Value + "s"
	}
	return fmt.Sprintf(" (did you mean %s? e.g. %s: %s)", k.field, k.field, example)
}
