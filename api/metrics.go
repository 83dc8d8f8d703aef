package api

import (
	"io"
	"net/http"

	"github.com/tend-sh/tend/internal/promtext"
	"github.com/tend-sh/tend/status"
)

// serveMetrics writes /metrics in the Prometheus text format (docs/reference.md "Metrics"): each
// family once, opened by its HELP and TYPE lines and followed by all its samples. The
// container families come from one status snapshot taken at scrape time.
func (a *Server) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	doc := a.sv.Status()
	setWriteDeadline(w)
	promtext.Family(w, "tend_instance_ready", "gauge", "1 when the instance's ready condition is True, else 0.")
	promtext.Uint(w, "tend_instance_ready", b2u(doc.Ready.True()))
	promtext.Family(w, "tend_instance_installed", "gauge", "1 when the instance's installed condition is True, else 0.")
	promtext.Uint(w, "tend_instance_installed", b2u(doc.Installed.True()))
	writeContainerMetrics(w, doc.Containers)
	a.sv.WriteMetrics(w) // probes' and proc's
	promtext.Family(w, "tend_console_dropped_lines_total", "counter", "Lines dropped because tend's stdout or stderr did not take them in time (log files and tend logs keep them).")
	promtext.Uint(w, "tend_console_dropped_lines_total", doc.ConsoleDroppedLines)
	writeProcessMetrics(w)
}

var containerStates = []status.State{status.Waiting, status.Initializing, status.Running, status.Backoff, status.Stopping, status.Stopped, status.Completed, status.Failed}

// containerFamilies are the families with one sample per container.
var containerFamilies = []struct {
	name, typ, help string
	value           func(status.Container) uint64
}{
	{"tend_container_restarts_total", "counter", "Starts of the container after its first: crashes, liveness kills and restart requests.",
		func(c status.Container) uint64 { return uint64(c.Restarts) }},
	{"tend_container_ready", "gauge", "1 when the container's ready condition is True, else 0.",
		func(c status.Container) uint64 { return b2u(c.Ready.True()) }},
	{"tend_container_alive", "gauge", "1 when the container's alive condition is True, else 0.",
		func(c status.Container) uint64 { return b2u(c.Alive.True()) }},
	{"tend_container_memory_bytes", "gauge", "Memory the container's current run uses: its cgroup's working set (usage minus inactive file pages), or without cgroups the resident set of its processes.",
		func(c status.Container) uint64 { return uint64(c.Usage.MemoryBytes) }},
	{"tend_container_pids", "gauge", "Processes and threads of the container's current run.",
		func(c status.Container) uint64 { return uint64(c.Usage.Pids) }},
	{"tend_container_oom_kills_total", "counter", "Processes of the container the kernel's OOM killer killed, over every run since tend started (0 without cgroups).",
		func(c status.Container) uint64 { return uint64(c.Usage.OOMKills) }},
}

func writeContainerMetrics(w io.Writer, containers []status.Container) {
	labels := make([]string, len(containers)) // `container="web"` of each container
	for i, c := range containers {
		labels[i] = `container="` + promtext.EscapeLabel(c.Name) + `"`
	}
	promtext.Family(w, "tend_container_state", "gauge", "1 for the state the container is in, 0 for the others.")
	for i, c := range containers {
		for _, s := range containerStates {
			promtext.Uint(w, `tend_container_state{`+labels[i]+`,state="`+string(s)+`"}`, b2u(c.State == s))
		}
	}
	for _, f := range containerFamilies {
		promtext.Family(w, f.name, f.typ, f.help)
		for i, c := range containers {
			promtext.Uint(w, f.name+"{"+labels[i]+"}", f.value(c))
		}
	}
	// CPU time is fractional: the one family written as a float.
	promtext.Family(w, "tend_container_cpu_seconds_total", "counter", "CPU time of the container's current run, in seconds: every process of it, live and exited.")
	for i, c := range containers {
		promtext.Float(w, "tend_container_cpu_seconds_total{"+labels[i]+"}", c.Usage.CPUSeconds)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
