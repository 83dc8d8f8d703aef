package probes

import (
	"strings"

	"github.com/VictoriaMetrics/metrics"
)

// Metrics holds the probe metrics; the supervisor writes it into /metrics with
// Metrics.WritePrometheus next to its own set:
//
//	tend_probe_checks_total{container="web",probe="liveness",result="success|failure"}
//	tend_probe_duration_seconds{container="web",probe="liveness"}  (histogram, le buckets)
var Metrics = metrics.NewSet()

// probeMetrics are the series of one probe, looked up once when it starts so a check
// only bumps counters.
type probeMetrics struct {
	successes *metrics.Counter
	failures  *metrics.Counter
	duration  *metrics.PrometheusHistogram
}

func metricsFor(container string, kind Kind) probeMetrics {
	labels := `container="` + escapeLabel(container) + `",probe="` + kind.String() + `"`
	return probeMetrics{
		successes: Metrics.GetOrCreateCounter(`tend_probe_checks_total{` + labels + `,result="success"}`),
		failures:  Metrics.GetOrCreateCounter(`tend_probe_checks_total{` + labels + `,result="failure"}`),
		// Prometheus-style le buckets (5ms..10s) rather than VictoriaMetrics' vmrange
		// ones, so that plain Prometheus can run histogram_quantile on them.
		duration: Metrics.GetOrCreatePrometheusHistogram(`tend_probe_duration_seconds{` + labels + `}`),
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

// labelEscaper escapes a label value for the Prometheus text format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(v string) string { return labelEscaper.Replace(v) }
