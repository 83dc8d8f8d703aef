package supervisor

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/VictoriaMetrics/metrics"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/status"
)

var containerStates = []string{status.Waiting, status.Initializing, status.Running, status.Backoff, status.Stopping, status.Stopped, status.Completed}

// serveMetrics writes /metrics in the Prometheus text format: container gauges and
// counters computed from the status at scrape time, the probe metrics, and tend's
// own process metrics (RSS, CPU, file descriptors).
func init() { metrics.ExposeMetadata(true) } // "# TYPE" lines for Prometheus

func (sv *Supervisor) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	doc := sv.Status()
	metrics.WriteGaugeUint64(w, "tend_instance_ready", b2u(doc.Ready.True()))
	metrics.WriteGaugeUint64(w, "tend_instance_installed", b2u(doc.Installed.True()))
	for _, c := range doc.Containers {
		l := `{container="` + escapeLabel(c.Name) + `"}`
		metrics.WriteCounterUint64(w, "tend_container_restarts_total"+l, uint64(c.Restarts))
		metrics.WriteGaugeUint64(w, "tend_container_ready"+l, b2u(c.Ready.True()))
		metrics.WriteGaugeUint64(w, "tend_container_alive"+l, b2u(c.Alive.True()))
		for _, s := range containerStates {
			name := fmt.Sprintf(`tend_container_state{container="%s",state="%s"}`, escapeLabel(c.Name), s)
			metrics.WriteGaugeUint64(w, name, b2u(c.State == s))
		}
	}
	metrics.WriteCounterUint64(w, "tend_orphans_reaped_total", proc.OrphansReaped())
	probes.Metrics.WritePrometheus(w)
	metrics.WriteProcessMetrics(w)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(v string) string { return labelEscaper.Replace(v) }
