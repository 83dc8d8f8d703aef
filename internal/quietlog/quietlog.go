// Package quietlog silences the standard library logger before the packages that use
// it at init time run: VictoriaMetrics/metrics logs an INFO line to stderr at start-up
// when the cgroup has no PSI files, which would land in every tend command's output.
// Go initialises packages one at a time, taking the first in import-path order whose
// imports are done; this one needs only io and log, which are done before the
// metrics package's own imports, so its init runs first. tests/cli_test.go pins it.
package quietlog

import (
	"io"
	"log"
)

func init() { log.SetOutput(io.Discard) }
