package convert

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/tend-sh/tend/spec"
)

// process-compose's defaults where they differ from tend's.
const (
	pcShutdownTimeoutSec = 10 // shutdown.timeout_seconds
	pcBackoffSec         = 1  // availability.backoff_seconds
	pcProbePeriodSec     = 10 // period_seconds
	pcProbeTimeoutSec    = 1  // timeout_seconds
	pcProbeFailures      = 3  // failure_threshold
	pcProbeHost          = "127.0.0.1"

	// pcNeverStableMs (100 years) is a stable_after_ms no run reaches: process-compose
	// never forgets a restart (max_restarts counts them all) and waits backoff_seconds
	// before each, where tend would reset its count and restart at once after a
	// stable run.
	pcNeverStableMs = 100 * 365 * 24 * 3600 * 1000
)

// pcConditions maps process-compose's depends_on conditions to tend's. A log line
// is how such a process gets ready in tend (ready_log_line becomes its
// readiness_probe), so process_log_ready waits for ready.
var pcConditions = map[string]string{
	"process_started":                spec.CondStarted,
	"process_healthy":                spec.CondReady,
	"process_log_ready":              spec.CondReady,
	"process_completed":              spec.CondCompleted,
	"process_completed_successfully": spec.CondSucceeded,
}

// processCompose converts a process-compose.yaml: a YAML mapping with processes.
func processCompose(data []byte, c *conv) {
	root, ok := parseYAML(data, c)
	if !ok {
		return
	}
	fields := c.fields(root)
	// The shell and the shutdown order first: every process uses them.
	sh, arg, shSrc := c.pcShell(fields, root.src())
	ordered := false
	for _, f := range fields {
		if f.key == "ordered_shutdown" {
			if v, ok := c.boolean(f.val); ok {
				ordered = v
			}
		}
	}
	c.pcShellFound(sh, arg, shSrc)
	for _, f := range fields {
		src := f.val.src()
		switch f.key {
		case "shell":
		case "processes":
			for _, p := range c.fields(f.val) {
				c.pcProcess(p, sh, arg, ordered)
			}
		case "ordered_shutdown":
			if ordered {
				c.mapped[src.Path] = true // tend always stops a container before those it depends on
			} else {
				c.drop("", src, "tend always stops a container before the ones it depends on (depends_on)")
			}
		case "environment":
			c.s.Env = c.pcEnvironment(f.val, "env")
		case "version":
			c.drop("", src, "tend reads every version of the format the same way")
		case "log_location", "log_level", "log_length", "log_configuration", "log_format":
			c.drop("", src, "tend prints every process's output on its own stdout and stderr, its own log by --log-format and --log-level")
		default:
			c.unknown("", src)
		}
	}
}

// pcShell is the shell process-compose runs commands with: shell.shell_command and
// shell_argument, bash -c by default; src is where the shell was chosen.
func (c *conv) pcShell(fields []field, rootSrc Source) (sh, arg string, src Source) {
	sh, arg, src = "bash", "-c", rootSrc
	for _, f := range fields {
		if f.key != "shell" {
			continue
		}
		for _, g := range c.fields(f.val) {
			v, ok := c.str(g.val)
			switch {
			case !ok:
			case g.key == "shell_command":
				sh, src = v, g.val.src()
				c.mapped[g.val.path] = true
			case g.key == "shell_argument":
				arg = v
				c.mapped[g.val.path] = true
			default:
				c.drop("", g.val.src(), "tend runs no elevated commands")
			}
		}
	}
	return sh, arg, src
}

// lookPath finds a program on PATH; tests replace it.
var lookPath = exec.LookPath

// pcShellFound warns when the shell process-compose runs commands with (bash unless
// shell.shell_command says otherwise) is not on this machine's PATH: the converted
// commands run it too, as [bash, -c, command], since bash's syntax ({1..3}, [[ ]])
// is not sh's. Where it is found nothing is said: the conversion is exact.
func (c *conv) pcShellFound(sh, arg string, src Source) {
	if _, err := lookPath(sh); err != nil {
		c.warn("", src, fmt.Sprintf("process-compose runs commands with %s, which is not on PATH here: commands run as [%s, %s, command] will not start", sh, sh, arg))
	}
}

// pcEnvironment is a list of KEY=VALUE (or a mapping).
func (c *conv) pcEnvironment(y node, path string) []spec.EnvVar {
	var env []spec.EnvVar
	add := func(name, value string, src Source) {
		c.from(fmt.Sprintf("%s[%d]", path, len(env)), src)
		env = append(env, spec.EnvVar{Name: name, Value: literal(value)})
	}
	if y.n.Kind == yaml.MappingNode {
		for _, f := range c.fields(y) {
			if v, ok := c.str(f.val); ok {
				add(f.key, v, f.val.src())
			}
		}
		return env
	}
	for _, item := range c.items(y) {
		v, ok := c.str(item)
		if !ok {
			continue
		}
		name, value, found := strings.Cut(v, "=")
		if !found {
			c.errorf(item.src(), "want KEY=VALUE, got %q", v)
			continue
		}
		add(name, value, item.src())
	}
	return env
}

// pcProcess converts processes.NAME into a container. ordered is the file's
// ordered_shutdown.
func (c *conv) pcProcess(f field, sh, arg string, ordered bool) {
	i, ok := c.addContainer(f.val.src())
	if !ok {
		return
	}
	pf := pcFields{ct: &c.s.Containers[i], p: containerPath(i), sh: sh, arg: arg, ordered: ordered}
	pf.ct.Name = f.key
	c.from(pf.p, f.val.src())
	c.from(pf.p+".name", f.val.src())
	// process-compose restarts nothing unless availability says so.
	pf.ct.RestartPolicy = &spec.RestartPolicy{Mode: spec.ModeNever}
	pf.ct.StopPolicy = &spec.StopPolicy{TermTimeoutMs: spec.Some[int64](pcShutdownTimeoutSec * 1000)}
	fields := c.fields(f.val)
	for i := range fields {
		if !c.pcProcessField(&pf, &fields[i]) {
			c.pcProcessOther(pf.p, fields[i])
		}
	}
	if pf.logLine != nil {
		c.pcReadyLogLine(*pf.logLine, pf.ct, pf.p)
	}
	if !c.mapped[f.val.path+".shutdown.timeout_seconds"] {
		c.note(pf.p+".stop_policy.term_timeout_ms", "process-compose's default shutdown.timeout_seconds")
	}
	switch {
	case len(pf.entrypoint) > 0:
		list := pf.entrypoint
		if pf.command != nil {
			list = append(list, *pf.command)
		}
		for j := range list {
			list[j] = literal(list[j])
		}
		pf.ct.Command = spec.Command{List: list, IsList: true}
	case pf.command != nil:
		pf.ct.Command = shell(sh, arg, *pf.command)
	}
}

// pcFields is one process being converted into the container ct at p, and what more
// than one of its fields decides (the command, ready_log_line after the probes).
type pcFields struct {
	ct         *spec.Container
	p          string
	sh, arg    string // the file's shell
	ordered    bool   // the file's ordered_shutdown
	entrypoint []string
	command    *string
	logLine    *field
}

// pcProcessField converts one field of a process that tend has a setting for; it
// reports whether g is one.
func (c *conv) pcProcessField(pf *pcFields, g *field) bool {
	ct, p, src := pf.ct, pf.p, g.val.src()
	switch g.key {
	case "command":
		if v, ok := c.str(g.val); ok {
			pf.command = &v
			c.from(p+".command", src)
		}
	case "entrypoint":
		for _, item := range c.items(g.val) {
			if v, ok := c.str(item); ok {
				pf.entrypoint = append(pf.entrypoint, v)
			}
		}
		c.from(p+".command", src)
	case "working_dir":
		if v, ok := c.str(g.val); ok {
			ct.WorkingDir = literal(v)
			c.from(p+".working_dir", src)
		}
	case "environment":
		ct.Env = c.pcEnvironment(g.val, p+".env")
	case "availability":
		c.pcAvailability(g.val, ct, p)
	case "schedule":
		c.pcSchedule(g.val, ct, p)
	case "shutdown":
		c.pcShutdown(g.val, ct, p, pf.sh, pf.arg)
	case "liveness_probe":
		ct.LivenessProbe = c.pcProbe(g.val, p+".liveness_probe", pf.sh, pf.arg)
	case "readiness_probe":
		ct.ReadinessProbe = c.pcProbe(g.val, p+".readiness_probe", pf.sh, pf.arg)
	case "disabled":
		if v, ok := c.boolean(g.val); ok {
			c.from(p+".target_state", src)
			if v {
				ct.TargetState = spec.TargetRemoved
			}
		}
	case "log_location":
		if v, ok := c.str(g.val); ok {
			ct.Log = &spec.Log{File: v}
			c.approx(p+".log.file", src, "tend writes stdout and stderr there, rotated by size")
		}
	case "depends_on":
		ct.DependsOn = c.pcDependsOn(g.val, p+".depends_on")
		if !pf.ordered && len(ct.DependsOn) > 0 {
			c.note(p+".depends_on", "tend stops this container before the ones it depends on; process-compose does so only with ordered_shutdown: true")
		}
	case "ready_log_line":
		pf.logLine = g
	default:
		return false
	}
	return true
}

// pcProcessOther drops a field of a process that tend has no setting for, and
// reports one it does not know.
func (c *conv) pcProcessOther(p string, g field) {
	src := g.val.src()
	switch g.key {
	case "is_daemon":
		c.drop(p, src, "tend supervises foreground processes: a daemon's fork looks like an exit")
	case "replicas":
		c.drop(p, src, "one container per process: copy it under other names")
	case "description", "namespace", "is_tty", "disable_ansi_colors", "is_foreground", "vars", "launch_timeout_seconds", "log_configuration":
		c.drop(p, src, "tend has no such setting")
	default:
		c.unknown(p, src)
	}
}

// pcDependsOn converts depends_on: NAME: {condition: ...}; without a condition
// process-compose waits for process_started.
func (c *conv) pcDependsOn(y node, path string) map[string]string {
	deps := map[string]string{}
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		dp := path + "." + f.key
		c.from(dp, f.val.src())
		deps[f.key] = spec.CondStarted
		for _, g := range c.fields(f.val) {
			if g.key != "condition" {
				c.unknown(dp, g.val.src())
				continue
			}
			v, ok := c.str(g.val)
			if !ok {
				continue
			}
			cond, known := pcConditions[v]
			if !known {
				c.errorf(g.val.src(), "unknown condition %q (process_started, process_healthy, process_log_ready, process_completed, process_completed_successfully)", v)
				continue
			}
			deps[f.key] = cond
			c.from(dp, g.val.src())
		}
	}
	return deps
}

// pcReadyLogLine is ready_log_line: ready once a line of output contains the text,
// a readiness probe of kind log_line. process-compose refuses it beside a
// readiness_probe, and tend has one readiness probe.
func (c *conv) pcReadyLogLine(f field, ct *spec.Container, p string) {
	v, ok := c.str(f.val)
	switch {
	case !ok:
	case v == "": // process-compose's "no log line"
		c.mapped[f.val.path] = true
	case ct.ReadinessProbe != nil:
		c.errorf(f.val.src(), "ready_log_line and readiness_probe exclude each other (process-compose refuses both too): keep one")
	default:
		ct.ReadinessProbe = &spec.Probe{Handler: spec.Handler{LogLine: spec.Some(regexp.QuoteMeta(v))}}
		path := p + ".readiness_probe.log_line"
		c.from(path, f.val.src())
		c.note(path, "ready_log_line is text found anywhere in a line of stdout or stderr: quoted as an RE2 expression")
	}
}

// pcSchedule maps a scheduled process (schedule: cron or interval, timezone) to
// tend's schedule: "CRON_TZ=ZONE CRON" or "@every INTERVAL". tend runs one run at a
// time (a time that comes while one goes is skipped) and never at start.
func (c *conv) pcSchedule(y node, ct *spec.Container, p string) {
	path := p + ".schedule"
	var cron, interval, zone string
	for _, g := range c.fields(y) {
		src := g.val.src()
		switch g.key {
		case "cron":
			cron, _ = c.str(g.val)
			c.from(path, src)
		case "interval":
			interval, _ = c.str(g.val)
			c.from(path, src)
		case "timezone":
			zone, _ = c.str(g.val)
			c.from(path, src)
		case "run_on_start":
			c.drop(path, src, "tend runs a scheduled container at its times only; tend restart NAME runs it now")
		case "max_concurrent":
			c.approx(path, src, "tend runs one run at a time: a time that comes while one goes is skipped")
		default:
			c.drop(path, src, "unknown schedule field "+g.key)
		}
	}
	switch {
	case cron != "" && zone != "":
		ct.Schedule = "CRON_TZ=" + zone + " " + cron
	case cron != "": // process-compose: cron wins over interval
		ct.Schedule = cron
	case interval != "":
		ct.Schedule = "@every " + interval
	}
}

// pcAvailability is the restart policy: a fixed backoff_seconds before every
// restart, max_restarts in all (process-compose never resets its count).
func (c *conv) pcAvailability(y node, ct *spec.Container, p string) {
	rp := ct.RestartPolicy
	path := p + ".restart_policy"
	backoff := int64(pcBackoffSec)
	exitOnFailure := false
	var maxRestarts *field
	fields := c.fields(y)
	for i, f := range fields {
		src := f.val.src()
		switch f.key {
		case "restart":
			v, _ := c.str(f.val)
			switch v {
			case "always":
				rp.Mode = spec.ModeAlways
				c.from(path+".mode", src)
			case "on_failure":
				rp.Mode = spec.ModeOnFailure
				c.from(path+".mode", src)
			case "no":
				c.from(path+".mode", src)
			case "exit_on_failure":
				// process-compose restarts nothing and shuts the project down, exiting
				// with the code, when the process exits non-zero; an exit 0 just ends it.
				exitOnFailure = true
				rp.Mode, rp.MaxFailures, rp.OnGiveUp = spec.ModeOnFailure, spec.Some(1), spec.GiveUpShutdown
				c.from(path+".mode", src)
				c.approx(path+".on_give_up", src, "on_failure with max_failures 1 and on_give_up shutdown: the first non-zero exit, however long the run, stops the instance and tend exits with its code; an exit 0 ends the container")
			default:
				c.errorf(src, "unknown restart %q (always, on_failure, exit_on_failure, no)", v)
			}
		case "backoff_seconds":
			if v, ok := c.integer(f.val); ok {
				backoff = v
				c.from(path+".min_period_ms", src)
			}
		case "max_restarts":
			maxRestarts = &fields[i]
		case "exit_on_end", "exit_on_skipped":
			c.drop(path, src, "tend exits when no container can run again (job mode) or on SIGTERM")
		default:
			c.unknown(path, src)
		}
	}
	if rp.Mode != spec.ModeNever {
		rp.MinPeriodMs, rp.MaxPeriodMs, rp.Backoff, rp.MaxJitterMs = spec.Some(backoff*1000), spec.Some(backoff*1000), spec.Some(1.0), spec.Some[int64](0)
		rp.StableAfterMs = spec.Some[int64](pcNeverStableMs)
		c.note(path+".min_period_ms", "process-compose waits backoff_seconds before every restart")
		c.note(path+".stable_after_ms", "100 years: process-compose never resets its count of restarts, so no run is long enough to reset tend's")
	}
	if maxRestarts != nil {
		c.pcMaxRestarts(maxRestarts.val, rp, path, exitOnFailure)
	}
}

// pcMaxRestarts maps max_restarts N (0: unlimited) to max_failures N+1: process-compose
// counts the restarts after the first run, tend the runs. With stable_after_ms out
// of reach every run counts, as every restart does in process-compose.
func (c *conv) pcMaxRestarts(y node, rp *spec.RestartPolicy, path string, exitOnFailure bool) {
	n, ok := c.integer(y)
	switch {
	case !ok:
	case n < 0:
		c.errorf(y.src(), "must not be negative (0: unlimited), got %d", n)
	case exitOnFailure || rp.Mode == spec.ModeNever:
		c.drop(path, y.src(), "process-compose counts restarts only with restart always or on_failure")
	case n == 0:
		c.from(path+".max_failures", y.src())
	default:
		rp.MaxFailures = spec.Some(int(n) + 1)
		c.approx(path+".max_failures", y.src(), "max_failures %d, the first run and %d restarts; then tend marks the container failed and the instance not ready, where process-compose shows it completed", n+1, n)
	}
}

// pcShutdown is the stop policy: a command, or a signal, then SIGKILL after
// timeout_seconds.
func (c *conv) pcShutdown(y node, ct *spec.Container, p, sh, arg string) {
	sp := ct.StopPolicy
	path := p + ".stop_policy"
	timeout := int64(pcShutdownTimeoutSec)
	var signal *Source
	sigName := ""
	for _, f := range c.fields(y) {
		src := f.val.src()
		switch f.key {
		case "command":
			if v, ok := c.str(f.val); ok {
				sp.Exec = &spec.Exec{Command: shell(sh, arg, v)}
				c.approx(path+".exec", src, "tend then waits wait_after_ms (timeout_seconds) for the exit, then SIGTERM and SIGKILL after term_timeout_ms; process-compose sends SIGKILL")
			}
		case "signal":
			if v, ok := c.integer(f.val); ok {
				name := ""
				if v > 0 && v < 65 {
					name = spec.SignalName(syscall.Signal(v))
				}
				if name == "" {
					c.errorf(src, "unknown signal number %d", v)
					continue
				}
				signal, sigName = &src, name
			}
		case "timeout_seconds":
			if v, ok := c.integer(f.val); ok {
				timeout = v
				c.from(path+".term_timeout_ms", src)
			}
		case "parent_only":
			c.drop(path, src, "tend's SIGTERM and SIGKILL go to the process group; a unix_signal handler's signal to the process")
		default:
			c.unknown(path, src)
		}
	}
	ms := timeout * 1000
	sp.TermTimeoutMs = spec.Some(ms)
	switch {
	case sp.Exec != nil:
		sp.WaitAfterMs = spec.Some(ms)
		if signal != nil {
			c.drop(path, *signal, "the shutdown command replaces the signal")
		}
	case signal != nil && sigName != "SIGTERM":
		sp.UnixSignal = &spec.UnixSignal{Signal: sigName}
		sp.MaxTries = spec.Some(1)
		sp.TimeLimit = &spec.TimeLimit{MinRestartPeriodMs: spec.Some(ms), MaxRestartPeriodMs: spec.Some(ms)}
		c.approx(path+".unix_signal", *signal, "sent to the process, then SIGKILL to the group after timeout_seconds")
	case signal != nil:
		c.from(path+".term_timeout_ms", *signal)
	}
}

// pcProbe converts a probe; process-compose's defaults (k8s's) are written out where
// tend's differ.
func (c *conv) pcProbe(y node, path, sh, arg string) *spec.Probe {
	pr := &spec.Probe{
		TimeLimit: &spec.TimeLimit{
			InitialDelayMs:     spec.Some[int64](0),
			MinRestartPeriodMs: spec.Some[int64](pcProbePeriodSec * 1000),
			MaxRestartPeriodMs: spec.Some[int64](pcProbePeriodSec * 1000),
			MaxExecutionTimeMs: spec.Some[int64](pcProbeTimeoutSec * 1000),
		},
		FailureThreshold: spec.Some(pcProbeFailures),
	}
	c.from(path, y.src())
	c.note(path+".time_limit", "process-compose's probe defaults: no initial delay, period 10 s, timeout 1 s, failure_threshold 3")
	tl := pr.TimeLimit
	for _, f := range c.fields(y) {
		src := f.val.src()
		switch f.key {
		case "exec":
			pr.Exec = c.pcProbeExec(f.val, path, sh, arg)
		case "http_get":
			pr.HTTPGet = c.pcHTTP(f.val, path+".http_get")
		case "initial_delay_seconds", "period_seconds", "timeout_seconds":
			v, ok := c.integer(f.val)
			if !ok {
				continue
			}
			switch f.key {
			case "initial_delay_seconds":
				tl.InitialDelayMs = spec.Some(v * 1000)
				c.from(path+".time_limit.initial_delay_ms", src)
			case "period_seconds":
				tl.MinRestartPeriodMs, tl.MaxRestartPeriodMs = spec.Some(v*1000), spec.Some(v*1000)
				c.from(path+".time_limit.min_restart_period_ms", src)
			case "timeout_seconds":
				tl.MaxExecutionTimeMs = spec.Some(v * 1000)
				c.from(path+".time_limit.max_execution_time_ms", src)
			}
		case "failure_threshold", "success_threshold":
			if v, ok := c.integer(f.val); ok {
				c.from(path+"."+f.key, src)
				if f.key == "failure_threshold" {
					pr.FailureThreshold = spec.Some(int(v))
				} else {
					pr.SuccessThreshold = spec.Some(int(v))
				}
			}
		default:
			c.unknown(path, src)
		}
	}
	return pr
}

// pcProbeExec is a probe's exec: its command runs with the file's shell.
func (c *conv) pcProbeExec(y node, path, sh, arg string) *spec.Exec {
	e := &spec.Exec{}
	for _, g := range c.fields(y) {
		switch g.key {
		case "command":
			if v, ok := c.str(g.val); ok {
				e.Command = shell(sh, arg, v)
				c.from(path+".exec.command", g.val.src())
			}
		case "working_dir":
			c.drop(path+".exec", g.val.src(), "an exec probe runs in the container's working_dir")
		default:
			c.unknown(path, g.val.src())
		}
	}
	return e
}

func (c *conv) pcHTTP(y node, path string) *spec.HTTPGet {
	h := &spec.HTTPGet{Host: pcProbeHost}
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		src := f.val.src()
		if f.key == "headers" {
			h.Headers = c.pcHeaders(f.val, path+".headers")
			continue
		}
		v, ok := c.str(f.val)
		if !ok {
			continue
		}
		switch f.key {
		case "host":
			h.Host = v
			c.from(path+".host", src)
		case "port":
			h.Port = literal(v)
			c.from(path+".port", src)
		case "path":
			h.Path = literal(v)
			c.from(path+".path", src)
		case "scheme":
			h.Scheme = v
			c.from(path+".scheme", src)
		case "status_code":
			if n, err := strconv.Atoi(v); err == nil && n >= 200 && n < 400 {
				c.approx(path, src, "tend accepts any status 200-399")
			} else {
				c.drop(path, src, "tend accepts a status 200-399")
			}
		default:
			c.unknown(path, src)
		}
	}
	return h
}

// pcHeaders converts headers, Go's http.Header: each name with a list of values (a
// single value is taken too), one tend header per value.
func (c *conv) pcHeaders(y node, path string) []spec.HTTPHeader {
	var out []spec.HTTPHeader
	for _, f := range c.fields(y) {
		values := []node{f.val}
		if f.val.n.Kind == yaml.SequenceNode {
			values = c.items(f.val)
		}
		for _, v := range values {
			if s, ok := c.str(v); ok {
				c.from(fmt.Sprintf("%s[%d]", path, len(out)), v.src())
				out = append(out, spec.HTTPHeader{Name: f.key, Value: literal(s)})
			}
		}
	}
	return out
}
