package restart

import (
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

func mustSchedule(t *testing.T, expr string) interface{ Next(time.Time) time.Time } {
	t.Helper()
	s, err := spec.ParseSchedule(expr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The decision at a scheduled time: start, or skip while a run goes on; the next
// time follows now, whatever was missed; a timer that fires early by the wall clock
// (set back) starts nothing.
func TestAtTimer(t *testing.T) {
	s, err := spec.ParseSchedule("CRON_TZ=UTC */5 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := func(hm string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04:05", "2026-03-01 "+hm)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tt := range []struct {
		name     string
		due, now time.Time
		running  bool
		want     Firing
	}{
		{"on time", at("10:05:00"), at("10:05:00"), false, Firing{Start: true, Next: at("10:10:00")}},
		{"a little late", at("10:05:00"), at("10:05:00.3"), false, Firing{Start: true, Next: at("10:10:00")}},
		{"a run still going", at("10:05:00"), at("10:05:00"), true, Firing{Skip: true, Next: at("10:10:00")}},
		{"frozen over three times: one run", at("10:05:00"), at("10:17:30"), false, Firing{Start: true, Next: at("10:20:00")}},
		{"clock set back", at("10:05:00"), at("09:58:00"), false, Firing{Next: at("10:05:00")}},
	} {
		if got := AtTimer(s, tt.due, tt.now, tt.running); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// @every counts from now; CRON_TZ follows the zone's daylight saving time: a daily
// 02:30 in New York skips the day 02:30 does not exist (spring forward, as cron
// does), and an hourly schedule runs once an hour, not twice, when the clocks fall
// back; 09:00 stays 09:00 local across the change.
func TestScheduleTimes(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	local := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, ny)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	every := mustSchedule(t, "@every 90s")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := every.Next(start); !got.Equal(start.Add(90 * time.Second)) {
		t.Errorf("@every 90s after %v: %v", start, got)
	}
	nine := mustSchedule(t, "CRON_TZ=America/New_York 0 9 * * *")
	// 2026-03-08: the clocks go from 02:00 EST to 03:00 EDT.
	if got, want := nine.Next(local("2026-03-07 12:00")), local("2026-03-08 09:00"); !got.Equal(want) {
		t.Errorf("09:00 New York after the change: %v, want %v", got, want)
	}
	if got := nine.Next(local("2026-03-07 12:00")).Sub(nine.Next(local("2026-03-06 12:00"))); got != 23*time.Hour {
		t.Errorf("the day of the change lasts %v between the runs, want 23h", got)
	}
	gap := mustSchedule(t, "CRON_TZ=America/New_York 30 2 * * *")
	if got := gap.Next(local("2026-03-07 12:00")); got.Before(local("2026-03-08 03:00")) {
		t.Errorf("02:30 on the day it does not exist ran at %v", got)
	}
	// 2026-11-01: the clocks go from 02:00 EDT back to 01:00 EST.
	hourly := mustSchedule(t, "CRON_TZ=America/New_York 0 * * * *")
	var runs []time.Time
	for tm := local("2026-11-01 00:30"); len(runs) < 4; {
		tm = hourly.Next(tm)
		runs = append(runs, tm)
	}
	for i := 1; i < len(runs); i++ {
		if d := runs[i].Sub(runs[i-1]); d != time.Hour {
			t.Errorf("hourly runs %v and %v are %v apart, want 1h", runs[i-1], runs[i], d)
		}
	}
}
