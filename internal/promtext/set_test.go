package promtext

import (
	"strings"
	"testing"
)

// TestSetWrite pins the exposition the previous library (VictoriaMetrics/metrics
// v1.40.2) wrote for the same series and observations, byte for byte: series sorted
// by name, cumulative le buckets, +Inf, _sum, _count.
func TestSetWrite(t *testing.T) {
	counters, histograms := &Set{}, &Set{}
	counters.Counter(`x_total{container="b",result="success"}`).Inc()
	counters.Counter(`x_total{container="a",result="failure"}`).Inc()
	counters.Counter(`x_total{container="a",result="failure"}`).Inc()
	for _, series := range []string{`d_seconds{container="a"}`, `d_seconds`} {
		for _, v := range []float64{0, 0.003, 0.005, 0.0051, 0.7, 3, 12, 2.5, -1} {
			histograms.Histogram(series).Update(v)
		}
	}
	var b strings.Builder
	counters.Write(&b)
	histograms.Write(&b)
	Float(&b, "st", 1764165928.123)
	Float(&b, "c", 3)
	Uint(&b, "u", 7)
	want := `x_total{container="a",result="failure"} 2
x_total{container="b",result="success"} 1
` + buckets("") + buckets(`container="a"`) + `st 1.764165928123e+09
c 3
u 7
`
	if b.String() != want {
		t.Errorf("wrote:\n%s\nwant:\n%s", b.String(), want)
	}
}

// buckets is the histogram text of d_seconds with labels after the observations of
// TestSetWrite (the negative one ignored).
func buckets(labels string) string {
	l := func(extra string) string {
		if labels == "" && extra == "" {
			return ""
		}
		if labels == "" {
			return "{" + extra + "}"
		}
		if extra == "" {
			return "{" + labels + "}"
		}
		return "{" + labels + "," + extra + "}"
	}
	var b strings.Builder
	for _, row := range []struct{ le, n string }{{"0.005", "3"}, {"0.01", "4"}, {"0.025", "4"}, {"0.05", "4"},
		{"0.1", "4"}, {"0.25", "4"}, {"0.5", "4"}, {"1", "5"}, {"2.5", "6"}, {"5", "7"}, {"10", "7"}, {"+Inf", "8"}} {
		b.WriteString("d_seconds_bucket" + l(`le="`+row.le+`"`) + " " + row.n + "\n")
	}
	b.WriteString("d_seconds_sum" + l("") + " 18.2131\nd_seconds_count" + l("") + " 8\n")
	return b.String()
}
