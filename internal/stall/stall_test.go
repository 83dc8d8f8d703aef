package stall

import (
	"testing"
	"time"
)

func TestLate(t *testing.T) {
	due := time.Now()
	for _, c := range []struct {
		after time.Duration
		late  bool
	}{
		{-time.Second, false}, // early: never late
		{0, false},
		{Tolerance, false},
		{Tolerance + time.Millisecond, true},
		{30 * time.Second, true},
	} {
		if got := Late(due, due.Add(c.after)); got != c.late {
			t.Errorf("Late(due, due+%v) = %v, want %v", c.after, got, c.late)
		}
	}
}

// A timer read as soon as it fires is on time; one read a while after it fired (as
// when tend was frozen) is late, and Reset makes it on time again.
func TestTimerFiredLate(t *testing.T) {
	tm := NewTimer(time.Millisecond)
	defer tm.Stop()
	<-tm.C
	if tm.FiredLate() {
		t.Errorf("a timer read at once fired late")
	}
	tm.Reset(time.Millisecond)
	<-tm.C
	time.Sleep(Tolerance + 50*time.Millisecond) // stands in for a frozen tend
	if !tm.FiredLate() {
		t.Errorf("a timer read %v after it fired is not late", Tolerance+50*time.Millisecond)
	}
	tm.Reset(time.Millisecond)
	<-tm.C
	if tm.FiredLate() {
		t.Errorf("a timer Reset and read at once fired late")
	}
}
