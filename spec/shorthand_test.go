package spec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Every place that takes a time_limit takes period, initial_delay and timeout, and
// loads them as the time_limit they mean; what they leave out takes its default.
func TestTimingShorthandLoads(t *testing.T) {
	tl := func(delay, minP, maxP, exec int64) TimeLimit {
		return TimeLimit{Some(delay), Some(minP), Some(maxP), Some[int64](0), Some(1.0), Some(exec)}
	}
	s := mustLoad(t, `
dynamic_resources:
  - {name: geo, revision: 1, urls: ["file:///dev/null"], storage_dir: geo, destination: geo.bin,
     verify: {exec: {command: "true"}, period: 3s}}
init_containers:
  - {name: migrate, command: "true", period: 250ms, timeout: 1m}
containers:
  - name: web
    command: sleep 100
    init: [{command: "true", initial_delay: 1s}]
    liveness_probe: {exec: {command: "true"}, period: 2s, initial_delay: 5s, timeout: 1s}
    readiness_probe: {exec: {command: "true"}, period: 200ms}
    startup_probe: {exec: {command: "true"}, timeout: 1.5s}
    stop_policy: {exec: {command: "true"}, period: 100ms, max_tries: 3}
    destroy_policy: {exec: {command: "true"}, timeout: 0s}
    notify_actions: [{exec: {command: "true"}, initial_delay: 1h}]
`, nil)
	c := s.Containers[0]
	tests := []struct {
		name string
		got  *TimeLimit
		want TimeLimit
	}{
		{"verify", s.DynamicResources[0].Verify.TimeLimit, tl(0, 3000, 3000, 10000)},
		{"init container", s.InitContainers[0].TimeLimit, tl(0, 250, 250, 60000)},
		{"init command", c.Init[0].TimeLimit, tl(1000, 1000, 60000, 0)},
		{"liveness", c.LivenessProbe.TimeLimit, tl(5000, 2000, 2000, 1000)},
		{"readiness", c.ReadinessProbe.TimeLimit, tl(5000, 200, 200, 1000)},
		{"startup", c.StartupProbe.TimeLimit, tl(5000, 5000, 60000, 1500)},
		{"stop", c.StopPolicy.TimeLimit, tl(0, 100, 100, 10000)},
		{"destroy", c.DestroyPolicy.TimeLimit, tl(0, 1000, 60000, 0)},
		{"notify", c.NotifyActions[0].TimeLimit, tl(3600000, 1000, 60000, 10000)},
	}
	for _, tt := range tests {
		if *tt.got != tt.want {
			t.Errorf("%s: time_limit %+v, want %+v", tt.name, *tt.got, tt.want)
		}
	}

	// render shows the time_limit, never the shorthand, and loads back the same.
	out, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"period:", "initial_delay:", "timeout:"} {
		if strings.Contains(string(out), " "+field) {
			t.Errorf("render shows the shorthand %s:\n%s", field, out)
		}
	}
	if want := "      time_limit:\n        initial_delay_ms: 5000\n        min_restart_period_ms: 2000\n        max_restart_period_ms: 2000\n"; !strings.Contains(string(out), want) {
		t.Errorf("render lacks the liveness time_limit %q:\n%s", want, out)
	}
	again := mustLoad(t, string(out), nil)
	if got, want := *again.Containers[0].LivenessProbe.TimeLimit, tests[3].want; got != want {
		t.Errorf("rendered spec loads time_limit %+v, want %+v", got, want)
	}
}

// Shorthand mixed with time_limit, and durations that are not durations, negative
// or finer than a millisecond, are errors naming the field and the value, with its line.
func TestTimingShorthandErrors(t *testing.T) {
	tests := []struct {
		name, fields, want string
		line               int
	}{
		{"mixed", "period: 2s\n      time_limit: {initial_delay_ms: 1}",
			"period: period and time_limit (line 7) exclude each other: write period, initial_delay and timeout, or time_limit alone", 6},
		{"mixed, time_limit first", "time_limit: {}\n      timeout: 1s",
			"timeout: timeout and time_limit (line 6) exclude each other: write period, initial_delay and timeout, or time_limit alone", 7},
		{"no unit", "period: 2", "period: must be a duration with a unit, such as 2s or 2ms, got 2", 6},
		{"not a duration", "initial_delay: soon", `initial_delay: must be a duration such as 2s, 500ms or 1m30s, got "soon"`, 6},
		{"empty", `timeout: ""`, `timeout: must be a duration such as 2s, 500ms or 1m30s, got ""`, 6},
		{"negative", "period: -1s", "period: must not be negative, got -1s", 6},
		{"sub-millisecond", "timeout: 1500us", "timeout: must be a whole number of milliseconds, got 1500us", 6},
		{"sub-millisecond fraction", "period: 0.0005s", "period: must be a whole number of milliseconds, got 0.0005s", 6},
		{"overflow", "period: 3000000h", `period: must be a duration such as 2s, 500ms or 1m30s, got "3000000h"`, 6},
		{"a list", "period: [1s]", "period: must be a string, got a list", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "containers:\n  - name: web\n    command: sleep 1\n    liveness_probe:\n      exec: {command: \"true\"}\n      " + tt.fields + "\n"
			errs := loadFieldErrors(t, doc)
			want := "containers[0].liveness_probe." + tt.want
			if len(errs) != 1 || errs[0].Error() != want || errs[0].Line != tt.line {
				t.Fatalf("errors %v (line %d), want line %d: %q", errs, errs[0].Line, tt.line, want)
			}
		})
	}
}

// Kubernetes' probe timing fields get the shorthand as their "did you mean", with
// the document's seconds as the example; where there is no shorthand they do not.
func TestTimingKubernetesHints(t *testing.T) {
	doc := `containers:
  - name: web
    command: sleep 1
    periodSeconds: 4
    readiness_probe:
      exec: {command: "true"}
      periodSeconds: 3
      initialDelaySeconds: x
      timeout_seconds: 1
      failureThreshold: 2
`
	var got []string
	for _, e := range loadFieldErrors(t, doc) {
		got = append(got, fmt.Sprintf("%d: %s", e.Line, e))
	}
	want := []string{
		"4: containers[0].periodSeconds: unknown field",
		"7: containers[0].readiness_probe.periodSeconds: unknown field (did you mean period? e.g. period: 3s)",
		"8: containers[0].readiness_probe.initialDelaySeconds: unknown field (did you mean initial_delay? e.g. initial_delay: 5s)",
		"9: containers[0].readiness_probe.timeout_seconds: unknown field (did you mean timeout? e.g. timeout: 1s)",
		"10: containers[0].readiness_probe.failureThreshold: unknown field (did you mean failure_threshold?)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// loadFieldErrors loads an invalid spec and returns its field errors.
func loadFieldErrors(t *testing.T, doc string) []*FieldError {
	t.Helper()
	_, err := Load(writeSpec(t, doc, nil), testOptions())
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load error = %v, want *Errors", err)
	}
	return errs.Fields
}
