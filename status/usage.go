package status

import (
	"fmt"
	"time"
)

// Usage is what a container uses (docs/reference.md "Cgroups and limits"), at most 2 s old. CPUSeconds,
// MemoryBytes and Pids are of the current run (0 memory and pids between runs; CPU
// keeps the last run's until the next starts); OOMKills counts every run's.
type Usage struct {
	CPUSeconds  float64 `json:"cpu_seconds"`
	MemoryBytes int64   `json:"memory_bytes"`
	Pids        int64   `json:"pids"`
	OOMKills    int64   `json:"oom_kills"`
	// CPUPercent is tend's own, beyond the four above: the CPU of the last second or so,
	// in % of one core (the difference of two samples), for the status table.
	CPUPercent float64 `json:"cpu_percent"`
}

// HumanDuration writes d in its largest unit, as kubectl prints ages: 45s, 3m, 5h
// (below two days), 2d; a negative d as 0s. tend describe and tend top show ages so.
func HumanDuration(d time.Duration) string {
	switch d = max(d, 0); {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// HumanBytes writes n in binary units with one decimal (12.3Mi), as the status table
// and events show memory; below 1Ki as bytes.
func HumanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	return fmt.Sprintf("%.1f%ci", v, units[i])
}
