package status

import (
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{45*time.Second + 900*time.Millisecond, "45s"},
		{time.Minute, "1m"},
		{59*time.Minute + 59*time.Second, "59m"},
		{time.Hour, "1h"},
		{47 * time.Hour, "47h"},
		{48 * time.Hour, "2d"},
		{100 * 24 * time.Hour, "100d"},
	} {
		if got := HumanDuration(tt.d); got != tt.want {
			t.Errorf("HumanDuration(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{1023, "1023"},
		{1024, "1.0Ki"},
		{120 << 20, "120.0Mi"},
		{3 << 30, "3.0Gi"},
	} {
		if got := HumanBytes(tt.n); got != tt.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
