package convert

import (
	"fmt"
	"strings"

	"github.com/tend-sh/tend/spec"
)

// podAgent converts pod_agent's workloads: a YAML mapping with workloads.
func podAgent(data []byte, c *conv) {
	root, ok := parseYAML(data, c)
	if !ok {
		return
	}
	for _, f := range c.fields(root) {
		switch f.key {
		case "workloads":
			for _, w := range c.items(f.val) {
				c.workload(w)
			}
		case "boxes":
			c.drop("", f.val.src(), "boxes are not supported")
		default:
			c.drop("", f.val.src(), "tend converts only workloads of a pod_agent spec")
		}
	}
}

// workload is one pod_agent workload: a container.
func (c *conv) workload(w node) {
	i, ok := c.addContainer(w.src())
	if !ok {
		return
	}
	ct := &c.s.Containers[i]
	p := containerPath(i)
	c.from(p, w.src())
	// pod_agent restarts the start command no more often than once every 10 s and
	// applies no time_limit to it (pod_agent's TTimeLimit).
	ct.RestartPolicy = &spec.RestartPolicy{MinPeriodMs: spec.Some[int64](10000), MaxPeriodMs: spec.Some[int64](10000), Backoff: spec.Some(1.0), StableAfterMs: spec.Some[int64](10000)}
	c.note(p+".restart_policy", "pod_agent restarts a workload at most once every 10 s")
	for _, f := range c.fields(w) {
		src := f.val.src()
		switch f.key {
		case "id":
			if v, ok := c.str(f.val); ok {
				ct.Name = v
				c.from(p+".name", src)
			}
		case "box_ref":
			c.drop(p, src, "boxes are not supported")
		case "start":
			c.podStart(f.val, ct, p)
		case "init":
			ct.Init = append(ct.Init, c.podInit(f.val, p, len(ct.Init))...)
		case "liveness_check":
			ct.LivenessProbe = c.podCheck(f.val, p+".liveness_probe")
		case "readiness_check":
			ct.ReadinessProbe = c.podCheck(f.val, p+".readiness_probe")
		case "stop_policy":
			ct.StopPolicy = c.podStop(f.val, p+".stop_policy")
		case "destroy_policy":
			ct.DestroyPolicy = c.podDestroy(f.val, p+".destroy_policy")
		case "env":
			ct.Env = c.podEnv(f.val, p)
		case "target_state":
			if v, ok := c.str(f.val); ok {
				ct.TargetState = v
				c.from(p+".target_state", src)
			}
		default:
			c.unknown(p, src)
		}
	}
}

// podInit is a workload's init commands, the first at index first of the
// container's init.
func (c *conv) podInit(y node, p string, first int) []spec.InitCommand {
	var out []spec.InitCommand
	for _, item := range c.items(y) {
		ic := spec.InitCommand{}
		ip := fmt.Sprintf("%s.init[%d]", p, first+len(out))
		c.from(ip, item.src())
		for _, g := range c.fields(item) {
			switch g.key {
			case "command_line":
				ic.Command = c.podCommand(g.val, ip+".command")
			case "time_limit":
				ic.TimeLimit = c.timeLimit(g.val, ip+".time_limit", podTimeLimitKeys)
			default:
				c.utilityField(g, ip)
			}
		}
		out = append(out, ic)
	}
	return out
}

// podStart is a workload's start: its command.
func (c *conv) podStart(y node, ct *spec.Container, p string) {
	for _, f := range c.fields(y) {
		switch f.key {
		case "command_line":
			ct.Command = c.podCommand(f.val, p+".command")
		case "cwd":
			if v, ok := c.str(f.val); ok {
				ct.WorkingDir = literal(v)
				c.from(p+".working_dir", f.val.src())
			}
		case "time_limit":
			c.drop(p+".restart_policy", f.val.src(), "pod_agent applies no time_limit to start either")
		case "user", "group":
			if v, ok := c.str(f.val); ok {
				if f.key == "user" {
					ct.User = v
				} else {
					ct.Group = v
				}
				c.approx(p+"."+f.key, f.val.src(), "tend runs every process of the container (init commands, probes, handlers) as the start command's %s", f.key)
			}
		default:
			c.utilityField(f, p)
		}
	}
}

// utilityField warns about the TUtilityContainer fields tend has no place for.
func (c *conv) utilityField(f field, near string) {
	switch f.key {
	case "user", "group":
		// tend has one user and group per container: the start command's.
		c.approx(near, f.val.src(), "tend runs this command as the container's %s (the start command's)", f.key)
	case "compute_resources":
		c.drop(near, f.val.src(), "tend sets no cgroup limits")
	default:
		c.unknown(near, f.val.src())
	}
}

// podCommand is a command_line: executed directly, as tend does.
func (c *conv) podCommand(y node, path string) spec.Command {
	v, ok := c.str(y)
	if !ok {
		return spec.Command{}
	}
	c.from(path, y.src())
	return spec.Command{String: literal(v)}
}

// podTimeLimitKeys: pod_agent's TTimeLimit has tend's names.
var podTimeLimitKeys = map[string]string{
	"initial_delay_ms": "initial_delay_ms", "min_restart_period_ms": "min_restart_period_ms",
	"max_restart_period_ms": "max_restart_period_ms", "restart_period_scale_ms": "restart_period_scale_ms",
	"restart_period_back_off": "restart_period_back_off", "max_execution_time_ms": "max_execution_time_ms",
}

// timeLimit converts a TTimeLimit whose keys are named by keys (original -> tend).
func (c *conv) timeLimit(y node, path string, keys map[string]string) *spec.TimeLimit {
	tl := &spec.TimeLimit{}
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		name, ok := keys[f.key]
		if !ok {
			c.unknown(path, f.val.src())
			continue
		}
		fp := path + "." + name
		if name == "restart_period_back_off" {
			if v, ok := c.number(f.val); ok {
				tl.RestartPeriodBackOff = spec.Some(v)
				c.from(fp, f.val.src())
			}
			continue
		}
		v, ok := c.integer(f.val)
		if !ok {
			continue
		}
		c.from(fp, f.val.src())
		switch name {
		case "initial_delay_ms":
			tl.InitialDelayMs = spec.Some(v)
		case "min_restart_period_ms":
			tl.MinRestartPeriodMs = spec.Some(v)
		case "max_restart_period_ms":
			tl.MaxRestartPeriodMs = spec.Some(v)
		case "restart_period_scale_ms":
			tl.RestartPeriodScaleMs = spec.Some(v)
		case "max_execution_time_ms":
			tl.MaxExecutionTimeMs = spec.Some(v)
		}
	}
	return tl
}

// podCheck converts a liveness_check or readiness_check into a probe: container ->
// exec, tcp_check -> tcp_socket, http_get as is; the handler's time_limit is the
// probe's.
func (c *conv) podCheck(y node, path string) *spec.Probe {
	pr := &spec.Probe{}
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		switch f.key {
		case "container":
			pr.Exec, pr.TimeLimit = c.podContainer(f.val, path)
		case "tcp_check":
			pr.TCPSocket, pr.TimeLimit = c.podTCP(f.val, path)
		case "http_get":
			pr.HTTPGet, pr.TimeLimit = c.podHTTP(f.val, path, true)
		case "failure_threshold", "success_threshold":
			if v, ok := c.integer(f.val); ok {
				c.from(path+"."+f.key, f.val.src())
				if f.key == "failure_threshold" {
					pr.FailureThreshold = spec.Some(int(v))
				} else {
					pr.SuccessThreshold = spec.Some(int(v))
				}
			}
		default:
			c.unknown(path, f.val.src())
		}
	}
	return pr
}

// podContainer is a TUtilityContainer used as a handler: exec and its time_limit.
func (c *conv) podContainer(y node, path string) (*spec.Exec, *spec.TimeLimit) {
	ex := &spec.Exec{}
	var tl *spec.TimeLimit
	c.from(path+".exec", y.src())
	for _, f := range c.fields(y) {
		switch f.key {
		case "command_line":
			ex.Command = c.podCommand(f.val, path+".exec.command")
		case "time_limit":
			tl = c.timeLimit(f.val, path+".time_limit", podTimeLimitKeys)
		default:
			c.utilityField(f, path)
		}
	}
	return ex, tl
}

func (c *conv) podTCP(y node, path string) (*spec.TCPSocket, *spec.TimeLimit) {
	t := &spec.TCPSocket{}
	var tl *spec.TimeLimit
	c.from(path+".tcp_socket", y.src())
	for _, f := range c.fields(y) {
		switch f.key {
		case "port":
			if v, ok := c.str(f.val); ok {
				t.Port = literal(v)
				c.from(path+".tcp_socket.port", f.val.src())
			}
		case "time_limit":
			tl = c.timeLimit(f.val, path+".time_limit", podTimeLimitKeys)
		default:
			c.unknown(path, f.val.src())
		}
	}
	return t, tl
}

func (c *conv) podHTTP(y node, path string, probe bool) (*spec.HTTPGet, *spec.TimeLimit) {
	h := &spec.HTTPGet{}
	var tl *spec.TimeLimit
	hp := path + ".http_get"
	// pod_agent counts only 2xx as success (pod_agent's THttpGet); so do tend's stop
	// and destroy handlers, its probes 200-399.
	if probe {
		c.approx(hp, y.src(), "pod_agent accepts only 2xx; a tend probe accepts 200-399 (redirects are not followed)")
	} else {
		c.from(hp, y.src())
	}
	for _, f := range c.fields(y) {
		src := f.val.src()
		switch f.key {
		case "port":
			if v, ok := c.str(f.val); ok {
				h.Port = literal(v)
				c.from(hp+".port", src)
			}
		case "path":
			if v, ok := c.str(f.val); ok {
				h.Path = literal(v)
				c.from(hp+".path", src)
			}
		case "expected_answer":
			if v, ok := c.str(f.val); ok {
				h.ExpectedAnswer = v
				c.from(hp+".expected_answer", src)
			}
		case "any":
			if v, ok := c.boolean(f.val); ok {
				h.Any = v
				c.from(hp+".any", src)
			}
		case "time_limit":
			tl = c.timeLimit(f.val, path+".time_limit", podTimeLimitKeys)
		default:
			c.unknown(hp, src)
		}
	}
	return h, tl
}

// podStop is a stop_policy: container, http_get or unix_signal, and max_tries.
func (c *conv) podStop(y node, path string) *spec.StopPolicy {
	sp := &spec.StopPolicy{}
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		switch f.key {
		case "container":
			sp.Exec, sp.TimeLimit = c.podContainer(f.val, path)
		case "http_get":
			sp.HTTPGet, sp.TimeLimit = c.podHTTP(f.val, path, false)
		case "unix_signal":
			sp.UnixSignal = &spec.UnixSignal{}
			c.from(path+".unix_signal", f.val.src())
			for _, g := range c.fields(f.val) {
				switch g.key {
				case "signal":
					if v, ok := c.str(g.val); ok {
						sp.UnixSignal.Signal = v
						c.from(path+".unix_signal.signal", g.val.src())
					}
				case "time_limit":
					sp.TimeLimit = c.timeLimit(g.val, path+".time_limit", podTimeLimitKeys)
				default:
					c.unknown(path, g.val.src())
				}
			}
		case "max_tries":
			if v, ok := c.integer(f.val); ok {
				sp.MaxTries = spec.Some(int(v))
				c.from(path+".max_tries", f.val.src())
			}
		default:
			c.unknown(path, f.val.src())
		}
	}
	return sp
}

// podDestroy is a destroy_policy: container or http_get, and max_tries.
func (c *conv) podDestroy(y node, path string) *spec.Policy {
	dp := &spec.Policy{}
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		switch f.key {
		case "container":
			dp.Exec, dp.TimeLimit = c.podContainer(f.val, path)
		case "http_get":
			dp.HTTPGet, dp.TimeLimit = c.podHTTP(f.val, path, false)
		case "max_tries":
			if v, ok := c.integer(f.val); ok {
				dp.MaxTries = spec.Some(int(v))
				c.from(path+".max_tries", f.val.src())
			}
		default:
			c.unknown(path, f.val.src())
		}
	}
	return dp
}

// podEnv converts env: literal_env values as they are; a secret_env is read from the
// file <secrets_dir>/<alias>/<id> (instance.vars.secrets_dir, default
// DefaultSecretsDir), where the secrets pod_agent's secret store would give are
// mounted, with a warning naming where.
func (c *conv) podEnv(y node, p string) []spec.EnvVar {
	var env []spec.EnvVar
	for _, item := range c.items(y) {
		var name string
		var value *string
		var secret *podSecret
		for _, f := range c.fields(item) {
			switch f.key {
			case "name":
				if v, ok := c.str(f.val); ok {
					name = v
				}
			case "value":
				for _, g := range c.fields(f.val) {
					switch g.key {
					case "literal_env":
						for _, h := range c.fields(g.val) {
							if h.key != "value" {
								c.unknown(p, h.val.src())
								continue
							}
							if v, ok := c.str(h.val); ok {
								value = &v
								c.mapped[h.val.path] = true
							}
						}
					case "secret_env":
						secret = c.podSecret(g.val)
					default:
						c.unknown(p, g.val.src())
					}
				}
			default:
				c.unknown(p, f.val.src())
			}
		}
		ep := fmt.Sprintf("%s.env[%d]", p, len(env))
		switch {
		case secret != nil:
			if secret.alias == "" || secret.id == "" {
				continue // the error is recorded
			}
			dir := c.secretsDir()
			file := fmt.Sprintf("{%s}/%s/%s", secretsDirVar, secret.alias, secret.id)
			c.from(ep, item.src())
			c.mapped[item.path+".name"] = true
			c.approx(ep+".value_from.file", secret.src, "read from %s/%s/%s (%s: instance.vars.%s, or --var %s=DIR), where the secret store's secrets must be mounted; a missing file is a validation error",
				dir, secret.alias, secret.id, file, secretsDirVar, secretsDirVar)
			env = append(env, spec.EnvVar{Name: name, ValueFrom: &spec.ValueFrom{File: file}})
		case value != nil:
			c.from(ep, item.src())
			c.mapped[item.path+".name"] = true
			env = append(env, spec.EnvVar{Name: name, Value: literal(*value)})
		default:
			c.errorf(item.src(), "an env entry needs value.literal_env.value or value.secret_env")
		}
	}
	return env
}

// secretsDirVar is the variable that says where secrets are mounted; a converted
// spec that reads one gets it in instance.vars (DefaultSecretsDir) unless set.
const (
	secretsDirVar     = "secrets_dir"
	DefaultSecretsDir = "/run/secrets"
)

// podSecret is a secret_env: the secret's alias and its id within it.
type podSecret struct {
	alias, id string
	src       Source
}

// podSecret reads secret_env {alias, id}; each must be one path component.
func (c *conv) podSecret(y node) *podSecret {
	s := &podSecret{src: y.src()}
	for _, f := range c.fields(y) {
		v, ok := c.str(f.val)
		if !ok {
			continue
		}
		switch f.key {
		case "alias":
			s.alias = v
		case "id":
			s.id = v
		default:
			c.unknown(y.path, f.val.src())
			continue
		}
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\x00{}") {
			c.errorf(f.val.src(), "secret_env.%s: must be a file name (no /, {, }), got %q", f.key, v)
			return s
		}
		c.mapped[f.val.path] = true
	}
	for _, k := range []struct{ key, v string }{{"alias", s.alias}, {"id", s.id}} {
		if k.v == "" {
			c.errorf(s.src, "secret_env needs %s", k.key)
			s.alias = ""
		}
	}
	return s
}

// secretsDir is instance.vars.secrets_dir of the converted spec, set to the default
// when absent.
func (c *conv) secretsDir() string {
	if c.s.Instance.Vars == nil {
		c.s.Instance.Vars = map[string]string{}
	}
	if _, ok := c.s.Instance.Vars[secretsDirVar]; !ok {
		c.s.Instance.Vars[secretsDirVar] = DefaultSecretsDir
		c.note("instance.vars."+secretsDirVar, "where secret_env files are read from: <secrets_dir>/<alias>/<id>")
	}
	return c.s.Instance.Vars[secretsDirVar]
}
