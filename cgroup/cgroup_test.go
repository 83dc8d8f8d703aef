package cgroup

import (
	"maps"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		root string
		want map[string]string
	}{
		{"v2-limited", map[string]string{CPULimit: "1.5c", CPUGuarantee: "0.9748c", MemLimit: "3221225472", MemGuarantee: "1073741824"}},
		{"v2-unlimited", map[string]string{}},
		{"v2-nested", map[string]string{CPULimit: "0.5c", MemLimit: "536870912", MemGuarantee: "268435456"}},
		{"v2-hostpath", map[string]string{CPULimit: "0.5c", MemLimit: "104857600"}},
		{"v1-limited", map[string]string{CPULimit: "2.5c", CPUGuarantee: "0.5c", MemLimit: "2147483648", MemGuarantee: "1073741824"}},
		{"v1-unlimited", map[string]string{}},
		{"v1-nested", map[string]string{MemLimit: "1000000000"}},
		{"does-not-exist", map[string]string{}},
	}
	for _, tt := range tests {
		got := Read(filepath.Join("testdata", tt.root))
		if !maps.Equal(got, tt.want) {
			t.Errorf("Read(%s) = %v, want %v", tt.root, got, tt.want)
		}
	}
}

func TestCores(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{1.5, "1.5c"}, {2, "2c"}, {0.25, "0.25c"}, {1.49721234, "1.4972c"}, {0.00001, "0c"}}
	for _, tt := range tests {
		if got := cores(tt.in); got != tt.want {
			t.Errorf("cores(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWeightToCores pins the inverse of Kubernetes' shares-to-weight conversion.
func TestWeightToCores(t *testing.T) {
	tests := []struct {
		weight float64
		want   string
	}{{1, "0.002c"}, {39, "0.9748c"}, {10000, "256c"}}
	for _, tt := range tests {
		if got := cores(weightToCores(tt.weight)); got != tt.want {
			t.Errorf("weightToCores(%v) = %s, want %s", tt.weight, got, tt.want)
		}
	}
}
