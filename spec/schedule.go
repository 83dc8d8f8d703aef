package spec

import (
	"fmt"

	"github.com/robfig/cron/v3"
)

// scheduleParser reads a container's schedule: five cron fields or a descriptor
// (@hourly, @daily, ..., @every 90s), with an optional CRON_TZ=Zone prefix; the
// time zone is local time otherwise.
var scheduleParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a container's schedule (docs/reference.md "Schedules").
func ParseSchedule(expr string) (cron.Schedule, error) {
	s, err := scheduleParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid schedule %q: %w", expr, err)
	}
	return s, nil
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
	if m := c.RestartPolicy.Mode; m != ModeNever && m != ModeOnFailure {
		k.c.addf(path, "needs restart_policy.mode never or on_failure (a run that ends), got %s", m)
	}
}
