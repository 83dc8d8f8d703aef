package spec

import (
	"strings"
	"testing"
)

// The schedules the cron library takes but tend refuses: an @every that is not whole
// seconds (the library would round it), and a time that never comes (a timer set
// for no time fires at once, again and again).
func TestParseSchedule(t *testing.T) {
	for expr, want := range map[string]string{
		"*/5 * * * *":               "",
		"@every 90s":                "",
		"@every 2m":                 "",
		"CRON_TZ=UTC @every 1s":     "",
		"0 0 29 2 *":                "", // a leap day comes within five years
		"@every 500ms":              "@every needs a whole number of seconds, at least 1s, not 500ms",
		"@every 1500ms":             "not 1500ms",
		"@every 0s":                 "not 0s",
		"@every -5s":                "not -5s",
		"0 0 31 2 *":                "no time in the next five years matches it",
		"CRON_TZ=UTC 0 0 30 2 *":    "no time in the next five years matches it",
		"@every soon":               "invalid schedule",
		"CRON_TZ=Nowhere/X 0 3 * *": "invalid schedule",
	} {
		_, err := ParseSchedule(expr)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("ParseSchedule(%q) = %v, want %q", expr, err, want)
		}
	}
}
