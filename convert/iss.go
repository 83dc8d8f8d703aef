package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/tend-sh/tend/spec"
)

// ISS classes (as in ISS).
const (
	issInstance        = "ru.yandex.iss.Instance"
	issJob             = "ru.yandex.iss.Job"
	issResource        = "ru.yandex.iss.Resource"
	issDynamicResource = "ru.yandex.iss.DynamicResource"
	issHookStart       = "iss_hook_start"
	issHookInstall     = "iss_hook_install"
)

// issHooks are the hooks tend runs, and where each goes.
var issHooks = map[string]string{
	issHookStart:      "the command of container " + issHookStart,
	"iss_hook_stop":   "its stop_policy exec",
	"iss_hook_status": "its liveness_probe exec",
	"iss_hook_notify": "its notify_actions exec",
	issHookInstall:    "init container " + issHookInstall + ", once, before the start hook",
}

var (
	md5HexRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-fA-F]{32}$`) })
	varCharRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_]`) })
	slotRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,5})@`) })
)

// issTimeLimitKeys maps ISS timeLimits keys to tend's time_limit names.
var issTimeLimitKeys = map[string]string{
	"initialDelayMs": "initial_delay_ms", "minRestartPeriodMs": "min_restart_period_ms",
	"maxRestartPeriodMs": "max_restart_period_ms", "restartPeriodScaleMs": "restart_period_scale_ms",
	"restartPeriodBackoff": "restart_period_back_off", "maxExecutionTimeMs": "max_execution_time_ms",
}

// iss converts an ISS instance configuration (as in ISS): a JSON list of objects
// with "@class". tend runs one instance: the first.
func iss(data []byte, c *conv) {
	root, ok := parseYAML(data, c)
	if !ok {
		jsonErrorLine(data, c)
		return
	}
	conf, ok := c.issFirst(root)
	if !ok {
		return
	}
	fields := c.fields(conf)
	if len(c.errs) > 0 {
		return
	}
	// The container and its hooks first: timeLimits and resources refer to them.
	var resources, timeLimits *field
	class := ""
	for i, f := range fields {
		switch f.key {
		case "resources":
			resources = &fields[i]
		case "timeLimits":
			timeLimits = &fields[i]
		case "@class":
			class = f.val.n.Value
			c.issField(f)
		default:
			c.issField(f)
		}
	}
	if resources == nil {
		c.errorf(conf.src(), "resources: missing (an ISS configuration needs at least the %s resource)", issHookStart)
		return
	}
	hooks := c.issResources(resources.val)
	if len(c.errs) > 0 {
		return
	}
	start, ok := hooks[issHookStart]
	if !ok {
		c.errorf(resources.val.src(), "resources: no %s resource: nothing to run", issHookStart)
		return
	}
	c.issContainer(class, start, hooks)
	c.issInstall(hooks)
	if timeLimits != nil {
		c.issTimeLimits(timeLimits.val, hooks)
	}
}

// issFirst is the configuration tend runs: root, or the first of a list (the others
// are dropped).
func (c *conv) issFirst(root node) (node, bool) {
	if root.n.Kind != yaml.SequenceNode {
		return root, true
	}
	list := c.items(root)
	if len(list) == 0 {
		c.errorf(root.src(), "no configuration in the list")
		return root, false
	}
	for _, extra := range list[1:] {
		c.drop("", extra.src(), "tend runs one instance: the first configuration of the list")
	}
	return list[0], true
}

// issField converts a field of the configuration other than resources and
// timeLimits, which wait for the container.
func (c *conv) issField(f field) {
	src := f.val.src()
	switch f.key {
	case "@class":
		v, _ := c.str(f.val)
		switch v {
		case issInstance, issJob:
			c.from("", src)
		default:
			c.errorf(src, "%q is not an applicable configuration (tend runs %s and %s; topologies and fillers must be applied first)", v, issInstance, issJob)
		}
	case "slot":
		if v, ok := c.str(f.val); ok {
			c.issSlot(v, src)
		}
	case "configurationId":
		if v, ok := c.str(f.val); ok {
			c.issRevision(v, src)
		}
	case "container":
		c.issPorto(f.val)
	case "properties":
		c.issProperties(f.val)
	default:
		c.unknown("", src)
	}
}

// issRevision makes configurationId the spec's revision id (docs/reference.md
// "Updates and rollback"); a character an id cannot hold (ISS writes NAME#TIMESTAMP)
// becomes '-', with a warning.
func (c *conv) issRevision(id string, src Source) {
	b := []byte(id)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			b[i] = '-'
		}
	}
	rev := string(b)
	if len(rev) > spec.MaxRevisionLen {
		rev = rev[:spec.MaxRevisionLen]
	}
	if !spec.ValidRevision(rev) {
		c.drop("", src, "not usable as a revision id")
		return
	}
	c.s.Instance.Revision = rev
	if rev != id {
		c.approx("instance.revision", src, "revision %q: a revision id holds only A-Z a-z 0-9 . _ -", rev)
		return
	}
	c.from("instance.revision", src)
}

// issSlot is the instance's name; a slot ending in :PORT also gives instance.port.
func (c *conv) issSlot(slot string, src Source) {
	c.s.Instance.Name = slot
	c.from("instance.name", src)
	if m := slotRe().FindStringSubmatch(slot); m != nil {
		port, _ := strconv.Atoi(m[1])
		if port >= 1 && port <= 65535 {
			c.s.Instance.Port = spec.Some(port)
			c.note("instance.port", "the port of slot "+slot)
			c.sources["instance.port"] = src
		}
	}
}

// issProperties become instance.vars; names tend cannot substitute get _ instead.
func (c *conv) issProperties(y node) {
	for _, f := range c.fields(y) {
		v, ok := c.str(f.val)
		if !ok {
			continue
		}
		name := varCharRe().ReplaceAllString(f.key, "_")
		if name == "" || (name[0] >= '0' && name[0] <= '9') {
			name = "_" + name
		}
		if c.s.Instance.Vars == nil {
			c.s.Instance.Vars = map[string]string{}
		}
		path := "instance.vars." + name
		if _, dup := c.s.Instance.Vars[name]; dup {
			c.drop("instance.vars", f.val.src(), "its variable name "+name+" is taken by another property")
			continue
		}
		c.s.Instance.Vars[name] = v
		if name != f.key {
			c.approx(path, f.val.src(), "renamed to %s: a variable name has only letters, digits and _", name)
		} else {
			c.from(path, f.val.src())
		}
	}
}

// issResources converts the resources mapping; it returns the source of every hook
// resource by name.
func (c *conv) issResources(y node) map[string]Source {
	hooks := map[string]Source{}
	for _, f := range c.fields(y) {
		name, src := f.key, f.val.src()
		class := ""
		for _, g := range c.fields(f.val) {
			if g.key == "@class" {
				class, _ = c.str(g.val)
			}
		}
		switch class {
		case issResource:
			i := len(c.s.Resources)
			path := fmt.Sprintf("resources[%d]", i)
			r := spec.Resource{Name: name}
			c.from(path, src)
			c.from(path+".name", Source{Path: f.val.path, Line: src.Line})
			if strings.HasPrefix(name, "iss_hook_") {
				r.Executable = true
				where, runs := issHooks[name]
				if runs {
					hooks[name] = src
					c.approx(path+".executable", src, "an ISS hook is a downloaded program: tend makes it executable (mode 0755) and runs it as %s", where)
				} else {
					c.approx(path+".executable", src, "tend fetches this hook and makes it executable but does not run it")
				}
			}
			c.issResourceFields(f.val, path, &r.URLs, &r.Checksum, &r.CheckPeriod, &r)
			c.s.Resources = append(c.s.Resources, r)
		case issDynamicResource:
			i := len(c.s.DynamicResources)
			path := fmt.Sprintf("dynamic_resources[%d]", i)
			d := spec.DynamicResource{Name: name, Destination: name, StorageDir: "." + name + ".versions"}
			c.from(path, src)
			c.from(path+".name", Source{Path: f.val.path, Line: src.Line})
			c.note(path+".storage_dir", "ISS keeps versions of its own; tend keeps them here, beside the destination")
			c.note(path+".revision", "a change of urls is a new version")
			var period string
			c.issResourceFields(f.val, path, &d.URLs, &d.Checksum, &period, nil)
			c.s.DynamicResources = append(c.s.DynamicResources, d)
		case "":
			c.errorf(src, "a resource needs \"@class\": %q or %q", issResource, issDynamicResource)
		default:
			c.errorf(src, "unknown resource class %q (want %q or %q)", class, issResource, issDynamicResource)
		}
	}
	return hooks
}

// issResourceFields converts the fields of one resource. A dynamic resource passes a
// check period nobody reads and no static (nil): it has neither in tend.
func (c *conv) issResourceFields(y node, path string, urls *[]string, checksum, period *string, static *spec.Resource) {
	dynamic := static == nil
	for _, f := range c.fields(y) {
		src := f.val.src()
		switch f.key {
		case "@class":
			c.mapped[f.val.path] = true
		case "urls":
			for _, u := range c.items(f.val) {
				if v, ok := c.str(u); ok {
					*urls = append(*urls, v)
				}
			}
			c.from(path+".urls", src)
		case "verification":
			for _, g := range c.fields(f.val) {
				switch g.key {
				case "checksum":
					v, ok := c.str(g.val)
					if !ok {
						continue
					}
					if md5HexRe().MatchString(v) {
						*checksum = "MD5:" + v
						c.approx(path+".checksum", g.val.src(), "a bare hex digest of 32 characters is MD5")
					} else {
						*checksum = v
						c.from(path+".checksum", g.val.src())
					}
				case "checkPeriod":
					v, ok := c.str(g.val)
					if !ok {
						continue
					}
					if dynamic {
						c.drop(path, g.val.src(), "tend re-verifies dynamic resources only by their verify action")
						continue
					}
					*period = v
					c.from(path+".check_period", g.val.src())
				default:
					c.unknown(path, g.val.src())
				}
			}
		case "uuid":
			v, ok := c.str(f.val)
			switch {
			case !ok:
			case dynamic:
				c.drop(path, src, "tend knows a version of a dynamic resource by its revision and urls")
			default:
				static.UUID = v
				c.from(path+".uuid", src)
			}
		case "cached":
			v, ok := c.boolean(f.val)
			switch {
			case !ok:
			case dynamic:
				c.drop(path, src, "tend keeps cached_revisions_count versions of a dynamic resource in its storage_dir")
			default:
				static.Cached = v
				c.from(path+".cached", src)
			}
		case "size":
			c.issSize(f.val, path, static)
		default:
			c.unknown(path, src)
		}
	}
}

// issSize converts a resource's size (bytes; 0: no check, as in ISS) into the
// free-space check before its download.
func (c *conv) issSize(y node, path string, static *spec.Resource) {
	src := y.src()
	if static == nil {
		c.drop(path, src, "tend checks the free space only for static resources")
		return
	}
	v, ok := c.str(y)
	if !ok {
		return
	}
	if v == "0" {
		c.drop(path, src, "size 0: no space is checked, as in ISS")
		return
	}
	n, err := spec.ParseBytes(v)
	if err != nil {
		c.errorf(src, "size: %v", err)
		return
	}
	static.Size = spec.Bytes{Opt: spec.Some(n)}
	c.approx(path+".size", src, "tend checks that much free space in instance.dir before the download (ISS reserves it on the host)")
}

// issContainer is the iss_hook_start container with the other hooks attached.
func (c *conv) issContainer(class string, start Source, hooks map[string]Source) {
	p := containerPath(0)
	ct := spec.Container{Name: issHookStart, Command: spec.Command{String: "./" + issHookStart}}
	c.sources[p] = start
	c.sources[p+".command"] = start
	mode := spec.ModeAlways
	if class == issJob {
		mode = spec.ModeOnFailure
		c.note(p+".restart_policy", "an ISS job: restarted until it exits 0 (tend's job mode)")
	}
	ct.RestartPolicy = &spec.RestartPolicy{Mode: mode}
	if src, ok := hooks["iss_hook_stop"]; ok {
		ct.StopPolicy = &spec.StopPolicy{Handler: spec.Handler{Exec: &spec.Exec{Command: spec.Command{String: "./iss_hook_stop"}}}}
		c.sources[p+".stop_policy"] = src
	}
	if src, ok := hooks["iss_hook_status"]; ok {
		ct.LivenessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.Exec{Command: spec.Command{String: "./iss_hook_status"}}}}
		c.sources[p+".liveness_probe"] = src
	}
	if src, ok := hooks["iss_hook_notify"]; ok {
		ct.NotifyActions = []spec.Policy{{Handler: spec.Handler{Exec: &spec.Exec{Command: spec.Command{String: "./iss_hook_notify"}}}}}
		c.sources[p+".notify_actions[0]"] = src
	}
	c.s.Containers = append(c.s.Containers, ct)
}

// issInstall makes the install hook an init container: it runs (until it exits 0,
// each run bounded by its timeLimits) after the resources are in place and before the
// start hook, as ISS runs it when it installs the instance.
func (c *conv) issInstall(hooks map[string]Source) {
	src, ok := hooks[issHookInstall]
	if !ok {
		return
	}
	c.s.InitContainers = append(c.s.InitContainers, spec.InitContainer{Name: issHookInstall, Command: spec.Command{String: "./" + issHookInstall}})
	c.sources["init_containers[0]"] = src
	c.sources["init_containers[0].command"] = src
}

// issTimeLimits converts timeLimits.<hook>: the start hook's restart periods become
// the container's restart policy, the other hooks' their handler's time_limit.
func (c *conv) issTimeLimits(y node, hooks map[string]Source) {
	p := containerPath(0)
	ct := &c.s.Containers[0]
	for _, f := range c.fields(y) {
		hook := f.key
		if _, ok := hooks[hook]; !ok {
			c.drop("", f.val.src(), "no hook "+hook+" that tend runs")
			continue
		}
		switch hook {
		case issHookStart:
			c.issStartLimits(f.val, ct, p)
		case "iss_hook_stop":
			ct.StopPolicy.TimeLimit = c.timeLimit(f.val, p+".stop_policy.time_limit", issTimeLimitKeys)
		case "iss_hook_status":
			ct.LivenessProbe.TimeLimit = c.timeLimit(f.val, p+".liveness_probe.time_limit", issTimeLimitKeys)
		case "iss_hook_notify":
			ct.NotifyActions[0].TimeLimit = c.timeLimit(f.val, p+".notify_actions[0].time_limit", issTimeLimitKeys)
		case issHookInstall:
			c.s.InitContainers[0].TimeLimit = c.timeLimit(f.val, "init_containers[0].time_limit", issTimeLimitKeys)
		}
	}
	// ISS's default back-off is 0 (as in ISS); tend's time_limit needs at least 1, and
	// with no scale the back-off changes nothing.
	var limits []*spec.TimeLimit
	if ct.StopPolicy != nil {
		limits = append(limits, ct.StopPolicy.TimeLimit)
	}
	if ct.LivenessProbe != nil {
		limits = append(limits, ct.LivenessProbe.TimeLimit)
	}
	if len(ct.NotifyActions) > 0 {
		limits = append(limits, ct.NotifyActions[0].TimeLimit)
	}
	if len(c.s.InitContainers) > 0 {
		limits = append(limits, c.s.InitContainers[0].TimeLimit)
	}
	for _, tl := range limits {
		if tl != nil && tl.RestartPeriodBackOff.IsSet() && tl.RestartPeriodBackOff.Get() < 1 && tl.RestartPeriodScaleMs.Get() == 0 {
			tl.RestartPeriodBackOff = spec.Some(1.0)
		}
	}
}

// issStartLimits maps the start hook's timeLimits onto the restart policy of the
// container at p (periods as they are, the ISS formula's back-off approximately) and
// its max_run_ms.
func (c *conv) issStartLimits(y node, ct *spec.Container, p string) {
	rp := ct.RestartPolicy
	path := p + ".restart_policy"
	c.from(path, y.src())
	for _, f := range c.fields(y) {
		src := f.val.src()
		switch f.key {
		case "minRestartPeriodMs":
			if v, ok := c.integer(f.val); ok {
				rp.MinPeriodMs = spec.Some(v)
				c.from(path+".min_period_ms", src)
			}
		case "maxRestartPeriodMs":
			if v, ok := c.integer(f.val); ok {
				rp.MaxPeriodMs = spec.Some(v)
				c.from(path+".max_period_ms", src)
			}
		case "restartPeriodBackoff":
			if v, ok := c.number(f.val); ok {
				rp.Backoff = spec.Some(max(v, 1))
				c.approx(path+".backoff", src, "tend waits min_period_ms * backoff^(failures-1) (plus jitter), ISS min + scale * backoff^step")
			}
		case "restartPeriodScaleMs":
			c.drop(path, src, "tend's restart policy has no scale; the back-off multiplies min_period_ms")
		case "initialDelayMs":
			c.drop(path, src, "tend starts a container at once")
		case "maxExecutionTimeMs": // in ISS a run this long is terminated forcibly
			v, ok := c.integer(f.val)
			switch {
			case !ok:
			case v == 0: // no limit, as for every hook's time_limit
				ct.MaxRunMs = spec.Some(v)
				c.from(p+".max_run_ms", src)
			default:
				ct.MaxRunMs = spec.Some(v)
				c.approx(p+".max_run_ms", src, "tend ends a run this long by the stop sequence (iss_hook_stop if there is one, SIGTERM, then SIGKILL) and counts it as a failure")
			}
		default:
			c.unknown(path, src)
		}
	}
}

// jsonErrorLine points a syntax error at the line encoding/json finds it on: go-yaml
// names the line where the enclosing {...} began, and ISS files are JSON (trailing
// commas, which YAML accepts, aside).
func jsonErrorLine(data []byte, c *conv) {
	// Trailing commas become blanks (offsets stay): JSON would stop at the first.
	lenient := bytes.Clone(data)
	for i, b := range lenient {
		if b != ',' {
			continue
		}
		j := i + 1
		for j < len(lenient) && (lenient[j] == ' ' || lenient[j] == '\t' || lenient[j] == '\n' || lenient[j] == '\r') {
			j++
		}
		if j < len(lenient) && (lenient[j] == '}' || lenient[j] == ']') {
			lenient[i] = ' '
		}
	}
	var v json.RawMessage // only checked: builds nothing from the file
	var se *json.SyntaxError
	if err := json.Unmarshal(lenient, &v); errors.As(err, &se) && len(c.errs) == 1 {
		c.errs[0].Line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		c.errs[0].Msg = se.Error()
	}
}
