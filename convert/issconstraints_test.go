package convert

import (
	"strings"
	"testing"
)

// A porto container's constraints become instance.limits (docs/reference.md "Foreign formats"); other keys,
// and values that set no limit, are a warning each.
func TestISSConstraints(t *testing.T) {
	iss := func(constraints string) string {
		return `[{"@class": "ru.yandex.iss.Instance", "slot": "a@h",
		"container": {"constraints": {` + constraints + `}},
		"resources": {"iss_hook_start": {"@class": "ru.yandex.iss.Resource", "urls": ["http://127.0.0.1:1/x"], "verification": {"checksum": "EMPTY:"}}}}]`
	}
	tests := []struct {
		constraints  string
		cpu          float64
		memory, pids int64
		warnings     []string
	}{
		{`"memory.limit_in_bytes": "2G"`, 0, 2 << 30, 0, nil},
		{`"memory.max": "536870912", "pids.max": "200"`, 0, 512 << 20, 200, nil},
		{`"cpu.max": "150000 100000"`, 1.5, 0, 0, nil},
		{`"cpu_limit": "2.5c", "memory_limit": "100M"`, 2.5, 100 << 20, 0, nil},
		{`"memory.recharge_on_pgfault": "1", "cpu.weight": "50"`, 0, 0, 0, []string{"memory.recharge_on_pgfault has no tend limit", "cpu.weight has no tend limit"}},
		{`"pids.max": "max", "cpu.max": "max 100000"`, 0, 0, 0, []string{`pids.max = "max" sets no limit`, `cpu.max: cannot read "max 100000"`}},
		{`"memory.limit_in_bytes": "lots"`, 0, 0, 0, []string{`cannot read "lots"`}},
	}
	for _, tt := range tests {
		res := mustConvert(t, []byte(iss(tt.constraints)), "iss.json", Auto)
		cpu, memory, pids := res.Spec.Instance.Limits.Values()
		if cpu != tt.cpu || memory != tt.memory || pids != tt.pids {
			t.Errorf("%s: limits cpu %v memory %d pids %d, want %v %d %d", tt.constraints, cpu, memory, pids, tt.cpu, tt.memory, tt.pids)
		}
		var all []string
		for _, w := range res.Warnings {
			all = append(all, w.Msg)
		}
		for _, want := range tt.warnings {
			if !strings.Contains(strings.Join(all, "\n"), want) {
				t.Errorf("%s: no warning %q in\n%s", tt.constraints, want, strings.Join(all, "\n"))
			}
		}
	}
}
