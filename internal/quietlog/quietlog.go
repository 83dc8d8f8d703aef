// Package quietlog silences the standard library logger before any other package's
// init runs, so that no library's log line (at init time or later) lands in a tend
// command's output: tend's own messages go through its logger, and net/http's server
// errors are routed there (api.newServer). It was added for a metrics library that
// logged at init; it stays because its cost is nil and a stray stderr line would
// break `tend validate`'s silent success (tests/cli_test.go). Go initialises packages
// one at a time, taking the first in import-path order whose imports are done; this
// one needs only io and log, so its init runs before those of the larger packages.
package quietlog

import (
	"io"
	"log"
)

func init() { log.SetOutput(io.Discard) }
