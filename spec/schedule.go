package spec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// scheduleParser reads a container's schedule: five cron fields or a descriptor
// (@hourly, @daily, ..., @every 90s), with an optional CRON_TZ=Zone prefix; the
// time zone is local time otherwise.
var scheduleParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a container's schedule (docs/reference.md "Schedules"). Two
// that the cron library takes are refused: an @every that is not a whole number of
// seconds (it would round 500ms, 0s or -5s to every second), and a time that never
// comes (0 0 31 2 *: the library finds no next time, and a timer set for none fires at
// once, again and again).
func ParseSchedule(expr string) (cron.Schedule, error) {
	s, err := scheduleParser.Parse(expr)
	if err == nil {
		err = checkEvery(expr)
	}
	if err == nil && s.Next(time.Now()).IsZero() {
		err = errors.New("no time in the next five years matches it")
	}
	if err != nil {
		return nil, fmt.Errorf("invalid schedule %q: %w", expr, err)
	}
	return s, nil
}

// checkEvery refuses an @every interval that is not a whole number of seconds, 1s or
// more: the cron library would run it every second, or every whole second below it.
func checkEvery(expr string) error {
	f := strings.Fields(expr)
	for i := 0; i+1 < len(f); i++ {
		if f[i] != "@every" {
			continue
		}
		if d, err := time.ParseDuration(f[i+1]); err == nil && (d < time.Second || d%time.Second != 0) {
			return fmt.Errorf("@every needs a whole number of seconds, at least 1s, not %s", f[i+1])
		}
	}
	return nil
}

// schedule checks a container's schedule: one that parses, on a container whose
// restart mode lets its runs end.
func (k *checker) schedule(path string, c *Container) {
	if c.Schedule == "" {
		return
	}
	if _, err := ParseSchedule(c.Schedule); err != nil {
		k.c.addf(path, "%v", err)
	}
	if m := c.RestartPolicy.Mode; !c.RestartPolicy.Completes() {
		k.c.addf(path, "needs restart_policy.mode never or on_failure (a run that ends), got %s", m)
	}
}
