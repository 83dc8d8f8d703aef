package spec

import (
	"math"
	"testing"
)

func TestParseCPU(t *testing.T) {
	tests := []struct {
		in      any
		want    float64
		wantErr string
	}{
		{1.5, 1.5, ""},
		{2, 2, ""},
		{int64(3), 3, ""},
		{"1500m", 1.5, ""},
		{"1.5", 1.5, ""},
		{"1.5c", 1.5, ""},
		{" 250m ", 0.25, ""},
		{"0.001", 0.001, ""},
		{".5", 0.5, ""},
		{0.1, 0.1, ""},
		{"0", 0, `"0": must be above 0`},
		{0, 0, `0: must be above 0`},
		{-1.5, 0, `-1.5: must be above 0`},
		{"-1", 0, `"-1": must be above 0`},
		{"0.0001", 0, `"0.0001": finer than 1 millicore (0.001)`},
		{"1.5m", 0, `"1.5m": finer than 1 millicore (0.001)`},
		{"1.5x", 0, `"1.5x": not a CPU quantity (use cores as a number, "1500m" or "1.5c")`},
		{"m", 0, `"m": not a CPU quantity (use cores as a number, "1500m" or "1.5c")`},
		{"1e3", 0, `"1e3": not a CPU quantity (use cores as a number, "1500m" or "1.5c")`},
		{"", 0, `"": not a CPU quantity (use cores as a number, "1500m" or "1.5c")`},
		{math.NaN(), 0, `NaN: not a number`},
		{true, 0, `true: a number or a string with a unit is needed, got bool`},
	}
	for _, tt := range tests {
		got, err := ParseCPU(tt.in)
		if msg := errString(err); msg != tt.wantErr || got != tt.want {
			t.Errorf("ParseCPU(%#v) = %v, %q; want %v, %q", tt.in, got, msg, tt.want, tt.wantErr)
		}
	}
}

func TestFormatCPU(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{1.5, "1.5"}, {2, "2"}, {0.25, "0.25"}, {0.001, "0.001"}, {1.0000001, "1"}}
	for _, tt := range tests {
		if got := FormatCPU(tt.in); got != tt.want {
			t.Errorf("FormatCPU(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      any
		want    int64
		wantErr string
	}{
		{512, 512, ""},
		{int64(1 << 40), 1 << 40, ""},
		{uint64(7), 7, ""},
		{1e9, 1e9, ""},
		{"4096", 4096, ""},
		{"512Mi", 512 << 20, ""},
		{"1Gi", 1 << 30, ""},
		{"1G", 1e9, ""},
		{"100M", 100e6, ""},
		{"1.5Gi", 3 << 29, ""},
		{"2Ki", 2048, ""},
		{"3K", 3000, ""},
		{"1Ti", 1 << 40, ""},
		{"2T", 2e12, ""},
		{"1.1Ki", 1127, ""}, // 1126.4 rounded up
		{"8388607Ti", 8388607 << 40, ""},
		{"12X", 0, `"12X": unknown unit "X" (use Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"12mi", 0, `"12mi": unknown unit "mi" (use Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"12 Mi", 0, `"12 Mi": unknown unit " Mi" (use Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"Mi", 0, `"Mi": not a byte quantity (use an integer, or a number with Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"1.2.3", 0, `"1.2.3": not a byte quantity (use an integer, or a number with Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"0", 0, `"0": must be above 0`},
		{"0Mi", 0, `"0Mi": must be above 0`},
		{-5, 0, `-5: must be above 0`},
		{"-5Mi", 0, `"-5Mi": must be above 0`},
		{"8388608Ti", 0, `"8388608Ti": too large (at most 9223372036854775807 bytes)`},
		{"99999999999999999999", 0, `"99999999999999999999": too large (at most 9223372036854775807 bytes)`},
		{1e300, 0, `"1` + zeros(300) + `": too large (at most 9223372036854775807 bytes)`},
		{[]int{1}, 0, `[1]: a number or a string with a unit is needed, got []int`},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if msg := errString(err); msg != tt.wantErr || got != tt.want {
			t.Errorf("ParseBytes(%#v) = %v, %q; want %v, %q", tt.in, got, msg, tt.want, tt.wantErr)
		}
	}
}

func TestParseCount(t *testing.T) {
	tests := []struct {
		in      any
		want    int64
		wantErr string
	}{
		{200, 200, ""},
		{"200", 200, ""},
		{200.0, 200, ""},
		{0, 0, `0: must be above 0`},
		{"-3", 0, `"-3": must be above 0`},
		{1.5, 0, `"1.5": not a whole number`},
		{"10k", 0, `"10k": not a whole number`},
		{"9223372036854775808", 0, `"9223372036854775808": too large (at most 9223372036854775807)`},
	}
	for _, tt := range tests {
		got, err := ParseCount(tt.in)
		if msg := errString(err); msg != tt.wantErr || got != tt.want {
			t.Errorf("ParseCount(%#v) = %v, %q; want %v, %q", tt.in, got, msg, tt.want, tt.wantErr)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}
