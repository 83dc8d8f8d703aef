package restart

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// loadSpec loads a spec text with the real defaults, as tend render does.
func loadSpec(t *testing.T, text string) *spec.Spec {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, spec.Options{Hostname: "h"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLongestShutdown(t *testing.T) {
	const sec = time.Second
	// Stop handler defaults: period 1 s (min) to 60 s, execution 10 s; term 30 s.
	tests := []struct {
		name     string
		spec     string
		longest  time.Duration
		graceSec int
	}{
		{"no containers", `containers: []`, 0, 5},
		{"no stop policy: term_timeout_ms default", `
containers: [{name: a, command: x}]`, 30 * sec, 35},
		{"term_timeout_ms alone", `
containers: [{name: a, command: x, stop_policy: {term_timeout_ms: 1500}}]`, 1500 * time.Millisecond, 7},
		{"exec handler, one try: its execution, wait_after, term", `
containers:
  - name: a
    command: x
    stop_policy: {exec: {command: stop}, wait_after_ms: 2000, term_timeout_ms: 3000}`, (10 + 2 + 3) * sec, 20},
		{"three http tries: each starts after max(period, execution)", `
containers:
  - name: a
    command: x
    stop_policy:
      http_get: {port: 1, path: /stop}
      max_tries: 3
      time_limit: {min_restart_period_ms: 5000, max_restart_period_ms: 5000, max_execution_time_ms: 2000}
      term_timeout_ms: 1000`, (5 + 5 + 2 + 1) * sec, 18},
		{"execution longer than the period: tries back to back", `
containers:
  - name: a
    command: x
    stop_policy:
      exec: {command: stop}
      max_tries: 3
      time_limit: {min_restart_period_ms: 1000, max_restart_period_ms: 1000, max_execution_time_ms: 4000}
      term_timeout_ms: 0`, 12 * sec, 17},
		{"growing period: 1 s + 2 s*3^step, capped at 10 s", `
containers:
  - name: a
    command: x
    stop_policy:
      exec: {command: stop}
      max_tries: 4
      time_limit: {initial_delay_ms: 500, min_restart_period_ms: 1000, max_restart_period_ms: 10000, restart_period_scale_ms: 2000, restart_period_back_off: 3, max_execution_time_ms: 2000}
      term_timeout_ms: 0`, (500 + 3000 + 7000 + 10000 + 2000) * time.Millisecond, 28},
		{"unix_signal: a period after each try, then SIGKILL; no term_timeout", `
containers:
  - name: a
    command: x
    stop_policy:
      unix_signal: {signal: INT}
      max_tries: 2
      time_limit: {initial_delay_ms: 250, min_restart_period_ms: 4000, max_restart_period_ms: 4000}
      term_timeout_ms: 60000`, 8250 * time.Millisecond, 14},
		{"destroy policy after the stop: initial delay and tries", `
containers:
  - name: a
    command: x
    stop_policy: {term_timeout_ms: 2000}
    destroy_policy:
      exec: {command: upload}
      max_tries: 2
      time_limit: {initial_delay_ms: 1000, min_restart_period_ms: 3000, max_restart_period_ms: 3000, max_execution_time_ms: 1000}`, (2 + 1 + 3 + 1) * sec, 12},
		{"containers stop at once: the slowest counts", `
containers:
  - {name: a, command: x, stop_policy: {term_timeout_ms: 4000}}
  - {name: b, command: x, stop_policy: {term_timeout_ms: 9000}}`, 9 * sec, 14},
		{"WAIT waits for the slowest IGNORE container's TERM", `
containers:
  - name: web
    command: x
    stop_policy: {exec: {command: drain}, wait_after_ms: 5000, term_timeout_ms: 1000, time_limit: {max_execution_time_ms: 3000}}
  - name: shipper
    command: x
    term_barrier: WAIT
    stop_policy: {term_timeout_ms: 2000}`, (3 + 5 + 2) * sec, 15},
		{"WAIT with a unix_signal handler does not wait", `
containers:
  - name: web
    command: x
    stop_policy: {exec: {command: drain}, wait_after_ms: 5000, term_timeout_ms: 1000, time_limit: {max_execution_time_ms: 3000}}
  - name: quick
    command: x
    term_barrier: WAIT
    stop_policy: {unix_signal: {signal: TERM}, time_limit: {min_restart_period_ms: 500, max_restart_period_ms: 500}}`, (3 + 5 + 1) * sec, 14},
		{"WAIT containers do not wait for each other", `
containers:
  - {name: a, command: x, term_barrier: WAIT, stop_policy: {exec: {command: s}, wait_after_ms: 20000, term_timeout_ms: 0, time_limit: {max_execution_time_ms: 1000}}}
  - {name: b, command: x, term_barrier: WAIT, stop_policy: {term_timeout_ms: 3000}}`, 21 * sec, 26},
		{"depends_on: times add up along the chain (api, then db)", `
containers:
  - {name: db, command: x, stop_policy: {term_timeout_ms: 4000}, destroy_policy: {exec: {command: d}, time_limit: {max_execution_time_ms: 1000}}}
  - {name: api, command: x, depends_on: {db: ready}, stop_policy: {term_timeout_ms: 3000}, destroy_policy: {exec: {command: d}, time_limit: {max_execution_time_ms: 2000}}}
  - {name: side, command: x, stop_policy: {term_timeout_ms: 6000}}`, (3 + 2 + 4 + 1) * sec, 15},
		{"depends_on: the longest of two chains", `
containers:
  - {name: db, command: x, stop_policy: {term_timeout_ms: 1000}}
  - {name: a, command: x, depends_on: {db: started}, stop_policy: {term_timeout_ms: 2000}}
  - {name: b, command: x, depends_on: {a: started}, stop_policy: {term_timeout_ms: 7000}}
  - {name: c, command: x, depends_on: {db: started}, stop_policy: {term_timeout_ms: 5000}}`, (7 + 2 + 1) * sec, 15},
		{"a WAIT container does not wait for its dependencies, but for unrelated IGNORE ones", `
containers:
  - {name: db, command: x, stop_policy: {exec: {command: s}, wait_after_ms: 20000, time_limit: {max_execution_time_ms: 1000}, term_timeout_ms: 1000}}
  - {name: api, command: x, term_barrier: WAIT, depends_on: {db: ready}, stop_policy: {term_timeout_ms: 2000}}
  - {name: worker, command: x, stop_policy: {exec: {command: s}, wait_after_ms: 4000, time_limit: {max_execution_time_ms: 1000}, term_timeout_ms: 1000}}`, (5 + 2 + 1 + 20 + 1) * sec, 34},
		{"absurd max_tries saturates instead of overflowing", `
containers:
  - name: a
    command: x
    stop_policy: {exec: {command: s}, max_tries: 2000000000, time_limit: {min_restart_period_ms: 60000, max_restart_period_ms: 60000, max_execution_time_ms: 1000}}`, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSpec(t, tt.spec)
			got, err := LongestShutdown(s)
			if err != nil {
				t.Fatal(err)
			}
			grace, gerr := Grace(s)
			if tt.graceSec < 0 {
				// 2e9 tries a minute apart: longer than any grace period, no overflow.
				if got != math.MaxInt64 || gerr == nil {
					t.Errorf("LongestShutdown = %v, Grace error %v; want the longest duration and an error", got, gerr)
				}
				return
			}
			if got != tt.longest {
				t.Errorf("LongestShutdown = %v, want %v", got, tt.longest)
			}
			if gerr != nil || grace != time.Duration(tt.graceSec)*sec {
				t.Errorf("Grace = %v, %v; want %ds", grace, gerr, tt.graceSec)
			}
		})
	}
}

func TestGraceUnbounded(t *testing.T) {
	for _, tt := range []struct{ spec, field string }{
		{`
containers: [{name: a, command: x, stop_policy: {exec: {command: s}, time_limit: {max_execution_time_ms: 0}}}]`,
			"containers[0].stop_policy.time_limit.max_execution_time_ms"},
		{`
containers:
  - {name: a, command: x}
  - {name: b, command: x, destroy_policy: {http_get: {port: 1}, time_limit: {max_execution_time_ms: 0}}}`,
			"containers[1].destroy_policy.time_limit.max_execution_time_ms"},
	} {
		_, err := Grace(loadSpec(t, tt.spec))
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("Grace error = %v, want one naming %s", err, tt.field)
		}
	}
}
