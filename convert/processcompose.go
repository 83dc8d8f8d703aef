package convert

import (
	"fmt"
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
)

// processCompose converts a process-compose.yaml: a YAML mapping with processes.
func processCompose(data []byte, c *conv) {
	root, ok := parseYAML(data, c)
	if !ok {
		return
	}
	sh, arg := "sh", "-c"
	fields := c.fields(root)
	for _, f := range fields { // the shell first: every command uses it
		if f.key != "shell" {
			continue
		}
		for _, g := range c.fields(f.val) {
			v, ok := c.str(g.val)
			switch {
			case !ok:
			case g.key == "shell_command":
				sh = v
				c.mapped[g.val.path] = true
			case g.key == "shell_argument":
				arg = v
				c.mapped[g.val.path] = true
			default:
				c.drop("", g.val.src(), "tend runs no elevated commands")
			}
		}
	}
	for _, f := range fields {
		src := f.val.src()
		switch f.key {
		case "shell":
		case "processes":
			for _, p := range c.fields(f.val) {
				c.pcProcess(p, sh, arg)
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

// pcProcess converts processes.NAME into a container.
func (c *conv) pcProcess(f field, sh, arg string) {
	i := len(c.s.Containers)
	p := containerPath(i)
	c.s.Containers = append(c.s.Containers, spec.Container{Name: f.key})
	ct := &c.s.Containers[i]
	c.from(p, f.val.src())
	c.from(p+".name", f.val.src())
	// process-compose restarts nothing unless availability says so.
	ct.RestartPolicy = &spec.RestartPolicy{Mode: spec.ModeNever}
	ct.StopPolicy = &spec.StopPolicy{TermTimeoutMs: ptr[int64](pcShutdownTimeoutSec * 1000)}
	c.note(p+".stop_policy.term_timeout_ms", "process-compose's default shutdown.timeout_seconds")
	var entrypoint []string
	var command *string
	for _, g := range c.fields(f.val) {
		src := g.val.src()
		switch g.key {
		case "command":
			if v, ok := c.str(g.val); ok {
				command = &v
				c.approx(p+".command", src, "process-compose runs command through a shell: tend runs [%s, %s, command]", sh, arg)
			}
		case "entrypoint":
			for _, item := range c.items(g.val) {
				if v, ok := c.str(item); ok {
					entrypoint = append(entrypoint, v)
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
		case "shutdown":
			c.pcShutdown(g.val, ct, p, sh, arg)
		case "liveness_probe":
			ct.LivenessProbe = c.pcProbe(g.val, p+".liveness_probe", sh, arg)
		case "readiness_probe":
			ct.ReadinessProbe = c.pcProbe(g.val, p+".readiness_probe", sh, arg)
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

		// Not supported yet: each maps to one tend field once it lands.
		case "depends_on": // -> depends_on: process_started started, process_healthy ready, process_completed completed, process_completed_successfully succeeded
			c.notYet(p, src)
		case "ready_log_line": // -> readiness_probe.log_line
			c.notYet(p, src)

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
	switch {
	case len(entrypoint) > 0:
		list := entrypoint
		if command != nil {
			list = append(list, *command)
		}
		for j := range list {
			list[j] = literal(list[j])
		}
		ct.Command = spec.Command{List: list, IsList: true}
	case command != nil:
		ct.Command = shell(sh, arg, *command)
	}
}

// pcAvailability is the restart policy: a fixed backoff_seconds between restarts.
func (c *conv) pcAvailability(y node, ct *spec.Container, p string) {
	rp := ct.RestartPolicy
	path := p + ".restart_policy"
	backoff := int64(pcBackoffSec)
	for _, f := range c.fields(y) {
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
				rp.Mode = spec.ModeOnFailure
				// -> restart_policy.on_give_up: shutdown once tend has it.
				c.approx(path+".mode", src, "on_failure; shutting the instance down when it gives up is not supported yet")
			default:
				c.errorf(src, "unknown restart %q (always, on_failure, exit_on_failure, no)", v)
			}
		case "backoff_seconds":
			if v, ok := c.integer(f.val); ok {
				backoff = v
				c.from(path+".min_period_ms", src)
			}
		case "max_restarts": // -> restart_policy.max_failures once tend has it
			c.notYet(path, src)
		case "exit_on_end", "exit_on_skipped":
			c.drop(path, src, "tend exits when no container can run again (job mode) or on SIGTERM")
		default:
			c.unknown(path, src)
		}
	}
	if rp.Mode != spec.ModeNever {
		rp.MinPeriodMs, rp.MaxPeriodMs, rp.Backoff, rp.MaxJitterMs = ptr(backoff*1000), ptr(backoff*1000), ptr(1.0), ptr[int64](0)
		c.note(path+".min_period_ms", "process-compose waits backoff_seconds before every restart")
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
	sp.TermTimeoutMs = ptr(ms)
	switch {
	case sp.Exec != nil:
		sp.WaitAfterMs = ptr(ms)
		if signal != nil {
			c.drop(path, *signal, "the shutdown command replaces the signal")
		}
	case signal != nil && sigName != "SIGTERM":
		sp.UnixSignal = &spec.UnixSignal{Signal: sigName}
		sp.MaxTries = ptr(1)
		sp.TimeLimit = &spec.TimeLimit{MinRestartPeriodMs: ptr(ms), MaxRestartPeriodMs: ptr(ms)}
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
			InitialDelayMs:     ptr[int64](0),
			MinRestartPeriodMs: ptr[int64](pcProbePeriodSec * 1000),
			MaxRestartPeriodMs: ptr[int64](pcProbePeriodSec * 1000),
			MaxExecutionTimeMs: ptr[int64](pcProbeTimeoutSec * 1000),
		},
		FailureThreshold: ptr(pcProbeFailures),
	}
	c.from(path, y.src())
	c.note(path+".time_limit", "process-compose's probe defaults: no initial delay, period 10 s, timeout 1 s, failure_threshold 3")
	tl := pr.TimeLimit
	for _, f := range c.fields(y) {
		src := f.val.src()
		switch f.key {
		case "exec":
			pr.Exec = &spec.Exec{}
			for _, g := range c.fields(f.val) {
				switch g.key {
				case "command":
					if v, ok := c.str(g.val); ok {
						pr.Exec.Command = shell(sh, arg, v)
						c.approx(path+".exec.command", g.val.src(), "run as [%s, %s, command]", sh, arg)
					}
				case "working_dir":
					c.drop(path+".exec", g.val.src(), "an exec probe runs in the container's working_dir")
				default:
					c.unknown(path, g.val.src())
				}
			}
		case "http_get":
			pr.HTTPGet = c.pcHTTP(f.val, path+".http_get")
		case "initial_delay_seconds", "period_seconds", "timeout_seconds":
			v, ok := c.integer(f.val)
			if !ok {
				continue
			}
			switch f.key {
			case "initial_delay_seconds":
				tl.InitialDelayMs = ptr(v * 1000)
				c.from(path+".time_limit.initial_delay_ms", src)
			case "period_seconds":
				tl.MinRestartPeriodMs, tl.MaxRestartPeriodMs = ptr(v*1000), ptr(v*1000)
				c.from(path+".time_limit.min_restart_period_ms", src)
			case "timeout_seconds":
				tl.MaxExecutionTimeMs = ptr(v * 1000)
				c.from(path+".time_limit.max_execution_time_ms", src)
			}
		case "failure_threshold", "success_threshold":
			if v, ok := c.integer(f.val); ok {
				c.from(path+"."+f.key, src)
				if f.key == "failure_threshold" {
					pr.FailureThreshold = ptr(int(v))
				} else {
					pr.SuccessThreshold = ptr(int(v))
				}
			}
		default:
			c.unknown(path, src)
		}
	}
	return pr
}

func (c *conv) pcHTTP(y node, path string) *spec.HTTPGet {
	h := &spec.HTTPGet{Host: pcProbeHost}
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		src := f.val.src()
		v, ok := "", true
		if f.key != "headers" {
			v, ok = c.str(f.val)
		}
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
			if v == "http" {
				c.mapped[src.Path] = true
				continue
			}
			// -> http_get.scheme once tend has it (SPEC.md §8.2).
			c.notYet(path, src)
		case "headers": // -> http_get.headers once tend has it
			c.notYet(path, src)
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
