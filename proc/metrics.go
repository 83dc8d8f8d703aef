package proc

import (
	"io"

	"github.com/tend-sh/tend/internal/promtext"
)

// WriteMetrics writes proc's families to w in the Prometheus text format
// (docs/reference.md "Metrics"): the orphans the reaper collected.
func WriteMetrics(w io.Writer) {
	promtext.Family(w, "tend_orphans_reaped_total", "counter", "Orphaned processes tend reaped that were none of its containers.")
	promtext.Uint(w, "tend_orphans_reaped_total", OrphansReaped())
}
