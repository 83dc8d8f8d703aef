package supervisor

import (
	"testing"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/status"
)

// The status document shows cgroup's modes as status's constants (cgroupsStatus
// converts one to the other).
func TestCgroupModesAreStatusModes(t *testing.T) {
	for _, c := range []struct {
		mode cgroup.Mode
		want status.CgroupMode
	}{
		{cgroup.ModeV2, status.CgroupsV2},
		{cgroup.ModeV1, status.CgroupsV1},
		{cgroup.ModeOff, status.CgroupsOff},
	} {
		if got := status.CgroupMode(c.mode); got != c.want {
			t.Errorf("cgroup mode %q shows as %q, want %q", c.mode, got, c.want)
		}
	}
}
