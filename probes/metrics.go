package probes

import (
	"io"

	"github.com/tend-sh/tend/internal/promtext"
)

// The probe metrics, one Set per family so that WriteMetrics can put each family's
// samples under its own HELP and TYPE lines:
//
//	tend_probe_checks_total{container="web",probe="liveness",result="success|failure"}
//	tend_probe_duration_seconds{container="web",probe="liveness"}  (histogram, le buckets)
var (
	checkCounts    = &promtext.Set{}
	checkDurations = &promtext.Set{}
)

// WriteMetrics writes the probe families to w in the Prometheus text format.
func WriteMetrics(w io.Writer) {
	promtext.Family(w, "tend_probe_checks_total", "counter", "Probe checks by container, probe (liveness, readiness) and result (success, failure).")
	checkCounts.Write(w)
	promtext.Family(w, "tend_probe_duration_seconds", "histogram", "Duration of probe checks in seconds.")
	checkDurations.Write(w)
}

// probeMetrics are the series of one probe, looked up once when it starts so a check
// only bumps counters.
type probeMetrics struct {
	successes *promtext.Counter
	failures  *promtext.Counter
	duration  *promtext.Histogram
}

func metricsFor(container string, kind Kind) probeMetrics {
	labels := `container="` + promtext.EscapeLabel(container) + `",probe="` + kind.String() + `"`
	return probeMetrics{
		successes: checkCounts.Counter(`tend_probe_checks_total{` + labels + `,result="success"}`),
		failures:  checkCounts.Counter(`tend_probe_checks_total{` + labels + `,result="failure"}`),
		// Prometheus-style le buckets (5ms..10s), so that plain Prometheus can run
		// histogram_quantile on them.
		duration: checkDurations.Histogram(`tend_probe_duration_seconds{` + labels + `}`),
	}
}

func (m probeMetrics) record(r Result) {
	if r.OK {
		m.successes.Inc()
	} else {
		m.failures.Inc()
	}
	m.duration.Update(r.Duration.Seconds())
}
