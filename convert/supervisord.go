package convert

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tend-sh/tend/spec"
)

// supervisord's defaults where they differ from tend's.
const (
	svPriority     = 999
	svStartSecs    = 1
	svStartRetries = 3
	svStopWaitSec  = 10
)

var svExpansionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`%%|%\(([A-Za-z0-9_]+)\)([-#0 +]*[0-9]*)([sd])`) })

// supervisord converts a supervisord.conf: each [program:NAME] section is a container
// (numprocs of them), started in the order of priority.
func supervisord(data []byte, c *conv) {
	sections := parseINI(data, c)
	if len(c.errs) > 0 {
		return
	}
	type program struct {
		sec      *iniSection
		name     string
		priority int
	}
	var programs []program
	containers, size := 0, 0
	for _, sec := range sections {
		kind, name, _ := strings.Cut(sec.name, ":")
		switch kind {
		case "program":
			pr := program{sec: sec, name: name, priority: svPriority}
			for _, k := range sec.keys {
				if k.name == "priority" {
					pr.priority = svInt(c, sec, k)
				}
			}
			programs = append(programs, pr)
			n := svNumprocs(c, sec)
			containers += n
			size += n * (len(sec.keys) + 1)
		case "supervisord":
			c.drop("", sec.src(), "supervisord's own settings: tend runs in the foreground, its log set by --log-format and --log-level")
		case "unix_http_server", "inet_http_server", "supervisorctl", "rpcinterface":
			c.drop("", sec.src(), "tend's API and its control commands listen where --listen says")
		case "include":
			c.drop("", sec.src(), "tend reads one file: put the included sections into it")
		case "group":
			c.drop("", sec.src(), "tend has no groups: each program is a container")
		case "eventlistener", "fcgi-program":
			c.drop("", sec.src(), "tend runs plain programs only")
		default:
			c.unknown("", sec.src())
		}
	}
	if len(c.errs) == 0 {
		c.checkSize(Source{Line: 1}, containers, size)
	}
	if len(c.errs) > 0 {
		return
	}
	sort.SliceStable(programs, func(i, j int) bool { return programs[i].priority < programs[j].priority })
	for _, pr := range programs {
		c.svProgram(pr.sec, pr.name)
	}
}

// svNumprocs is a program's numprocs (at least 1), read before anything is built: at
// most maxContainers, as each copy is a container.
func svNumprocs(c *conv, sec *iniSection) int {
	for _, k := range sec.keys {
		if k.name != "numprocs" {
			continue
		}
		switch n := svInt(c, sec, k); {
		case n > maxContainers:
			c.errorf(sec.keySrc(k), "numprocs %d: tend converts at most %d containers", n, maxContainers)
			return 0
		case n > 1:
			return n
		}
	}
	return 1
}

func svInt(c *conv, sec *iniSection, k iniKey) int {
	v, err := strconv.Atoi(k.value)
	if err != nil {
		c.errorf(sec.keySrc(k), "must be an integer, got %q", k.value)
	}
	return v
}

func svBool(c *conv, sec *iniSection, k iniKey) bool {
	switch strings.ToLower(k.value) {
	case "true", "yes", "on", "1":
		return true
	case "false", "no", "off", "0":
		return false
	}
	c.errorf(sec.keySrc(k), "must be true or false, got %q", k.value)
	return false
}

// svProgram converts one [program:NAME] into numprocs containers.
func (c *conv) svProgram(sec *iniSection, program string) {
	numprocs, start := svNumprocs(c, sec), 0
	processName := "%(program_name)s"
	for _, k := range sec.keys {
		switch k.name {
		case "numprocs_start":
			start = svInt(c, sec, k)
		case "process_name":
			processName = k.value
		}
	}
	if numprocs > 1 && !strings.Contains(processName, "process_num") {
		c.errorf(sec.src(), "numprocs %d needs %%(process_num)d in process_name", numprocs)
		return
	}
	for n := start; n < start+numprocs; n++ {
		x := svExpander{c: c, vars: map[string]any{"program_name": program, "group_name": program, "process_num": n, "numprocs": numprocs}}
		i, ok := c.addContainer(sec.src())
		if !ok {
			return
		}
		p := containerPath(i)
		ct := &c.s.Containers[i]
		c.from(p, sec.src())
		ct.Name = program
		if processName != "%(program_name)s" {
			ct.Name = x.plain(processName, sec.src(), p)
		}
		c.from(p+".name", sec.src())
		c.svKeys(sec, ct, p, x)
	}
}

// svKeys converts the keys of a program section into the container at p.
func (c *conv) svKeys(sec *iniSection, ct *spec.Container, p string, x svExpander) {
	// supervisord gives up (FATAL) after the first start and startretries retries
	// that each end within startsecs: as many runs shorter than stable_after_ms.
	k := &svProgramKeys{c: c, sec: sec, ct: ct, p: p, x: x, stopWait: svStopWaitSec,
		rp: &spec.RestartPolicy{Mode: spec.ModeOnFailure, StableAfterMs: spec.Some[int64](svStartSecs * 1000), MaxFailures: spec.Some(svStartRetries + 1)}}
	ct.RestartPolicy = k.rp
	for _, key := range sec.keys {
		if !k.process(key) && !k.restart(key) && !k.stop(key) && !k.output(key) {
			c.unknown(p, sec.keySrc(key))
		}
	}
	for _, d := range []struct{ key, path, note string }{
		{"autorestart", ".restart_policy.mode", "supervisord's default autorestart=unexpected"},
		{"startsecs", ".restart_policy.stable_after_ms", "supervisord's default startsecs=1"},
		{"startretries", ".restart_policy.max_failures", "supervisord's default startretries=3, and the first start"},
	} {
		if !slices.ContainsFunc(sec.keys, func(k iniKey) bool { return k.name == d.key }) {
			c.note(p+d.path, d.note)
		}
	}
	for _, key := range k.logKeys {
		c.svLogKey(sec, key, ct, p, k.stdoutLog)
	}
	k.stopPolicy()
}

// svProgramKeys converts the keys of one program section into the container ct at
// p, and gathers what more than one key decides (the stop policy, the log file).
type svProgramKeys struct {
	c   *conv
	sec *iniSection
	ct  *spec.Container
	p   string
	x   svExpander

	rp         *spec.RestartPolicy
	stopWait   int64  // stopwaitsecs
	stopSignal string // stopsignal without SIG, "" for SIGTERM
	stdoutLog  string // stdout_logfile when it is a file
	logKeys    []iniKey
}

// process converts the keys of what runs and where; it reports whether k is one.
func (k *svProgramKeys) process(key iniKey) bool {
	c, ct, p, src := k.c, k.ct, k.p, k.sec.keySrc(key)
	switch key.name {
	case "command":
		ct.Command = spec.Command{String: k.x.command(key.value, src, p+".command")}
		c.from(p+".command", src)
	case "process_name", "numprocs", "numprocs_start":
		c.from(p+".name", src)
	case "priority":
		c.mapped[src.Path] = true
		c.note(p, fmt.Sprintf("priority %s: containers start in priority order", key.value))
	case "directory":
		ct.WorkingDir = k.x.subst(key.value, src, p+".working_dir")
		c.from(p+".working_dir", src)
	case "environment":
		ct.Env = c.svEnvironment(key, src, p, k.x)
	case "autostart":
		if !svBool(c, k.sec, key) {
			ct.TargetState = spec.TargetRemoved
		}
		c.from(p+".target_state", src)
	case "user":
		ct.User = k.x.subst(key.value, src, p+".user")
		c.from(p+".user", src)
	case "umask":
		c.drop(p, src, "tend does not change the umask")
	default:
		return false
	}
	return true
}

// restart converts the keys of the restart policy; it reports whether k is one.
func (k *svProgramKeys) restart(key iniKey) bool {
	c, rp, p, src := k.c, k.rp, k.p, k.sec.keySrc(key)
	switch key.name {
	case "autorestart":
		switch strings.ToLower(key.value) {
		case "true":
			rp.Mode = spec.ModeAlways
		case "false":
			rp.Mode = spec.ModeNever
		case "unexpected":
		default:
			c.errorf(src, "must be true, false or unexpected, got %q", key.value)
		}
		c.from(p+".restart_policy.mode", src)
	case "exitcodes":
		if strings.TrimSpace(key.value) == "0" {
			c.mapped[src.Path] = true
		} else {
			c.approx(p+".restart_policy.mode", src, "tend expects exit code 0 only: any other restarts an on_failure container")
		}
	case "startsecs":
		v := svInt(c, k.sec, key)
		rp.StableAfterMs = spec.Some(int64(v) * 1000)
		c.approx(p+".restart_policy.stable_after_ms", src, "a shorter run is a failed start, counted towards max_failures; supervisord retries it whatever its exit code and autorestart, tend only as restart_policy.mode says")
	case "startretries":
		if v := svInt(c, k.sec, key); v < 0 {
			c.errorf(src, "must not be negative, got %d", v)
		} else {
			rp.MaxFailures = spec.Some(v + 1)
			c.approx(p+".restart_policy.max_failures", src, "max_failures %d: supervisord gives up after the first start and %d retries, each ending within startsecs", v+1, v)
		}
	default:
		return false
	}
	return true
}

// stop converts the keys of the stop sequence; it reports whether k is one.
func (k *svProgramKeys) stop(key iniKey) bool {
	c, p, src := k.c, k.p, k.sec.keySrc(key)
	switch key.name {
	case "stopsignal":
		k.stopSignal = strings.ToUpper(strings.TrimPrefix(strings.ToUpper(key.value), "SIG"))
		c.from(p+".stop_policy.unix_signal", src)
	case "stopwaitsecs":
		k.stopWait = int64(svInt(c, k.sec, key))
		c.from(p+".stop_policy", src)
	case "stopasgroup", "killasgroup":
		if svBool(c, k.sec, key) {
			c.mapped[src.Path] = true // tend signals the process group
		} else {
			c.approx(p+".stop_policy", src, "tend's SIGTERM and SIGKILL go to the whole process group")
		}
	default:
		return false
	}
	return true
}

// output converts the keys of the output and its files (the rotation ones wait in
// logKeys for stdout_logfile); it reports whether k is one.
func (k *svProgramKeys) output(key iniKey) bool {
	c, p, src := k.c, k.p, k.sec.keySrc(key)
	switch key.name {
	case "redirect_stderr":
		if svBool(c, k.sec, key) {
			c.approx(p, src, "tend prints stderr lines on its own stderr; with log.file both streams go into it")
		} else {
			c.mapped[src.Path] = true
		}
	case "stdout_logfile":
		switch v := key.value; v {
		case "/dev/stdout", "/dev/fd/1":
			c.mapped[src.Path] = true // tend prints every line, prefixed, on its stdout
		case "NONE", "AUTO":
			c.drop(p, src, "tend prints the output on its own stdout; a log.file needs a path")
		default:
			k.stdoutLog = k.x.plain(v, src, p+".log.file")
			k.ct.Log = &spec.Log{File: k.stdoutLog}
			c.approx(p+".log.file", src, "tend also prints the lines on its stdout")
		}
	case "stdout_logfile_maxbytes", "stdout_logfile_backups", "stderr_logfile_maxbytes", "stderr_logfile_backups", "stderr_logfile":
		k.logKeys = append(k.logKeys, key)
	case "serverurl", "stdout_capture_maxbytes", "stdout_events_enabled", "stdout_syslog",
		"stderr_capture_maxbytes", "stderr_events_enabled", "stderr_syslog":
		c.drop(p, src, "tend has no such setting")
	default:
		return false
	}
	return true
}

// stopPolicy writes the stop policy: stopsignal (or SIGTERM), then SIGKILL after
// stopwaitsecs.
func (k *svProgramKeys) stopPolicy() {
	sp := &spec.StopPolicy{}
	k.ct.StopPolicy = sp
	ms := k.stopWait * 1000
	if k.stopSignal != "" {
		sp.UnixSignal = &spec.UnixSignal{Signal: "SIG" + k.stopSignal}
		sp.MaxTries = spec.Some(1)
		sp.TimeLimit = &spec.TimeLimit{MinRestartPeriodMs: spec.Some(ms), MaxRestartPeriodMs: spec.Some(ms)}
		k.c.note(k.p+".stop_policy", "stopsignal, then SIGKILL after stopwaitsecs")
	} else {
		sp.TermTimeoutMs = spec.Some(ms)
		k.c.note(k.p+".stop_policy", "SIGTERM, then SIGKILL after stopwaitsecs")
	}
}

// svLogKey maps the rotation settings onto the one log.file.
func (c *conv) svLogKey(sec *iniSection, k iniKey, ct *spec.Container, p, stdoutLog string) {
	src := sec.keySrc(k)
	switch k.name {
	case "stderr_logfile":
		switch k.value {
		case "/dev/stderr", "/dev/fd/2":
			c.mapped[src.Path] = true
		default:
			c.drop(p, src, "tend writes stderr lines into the one log.file of stdout_logfile")
		}
	case "stdout_logfile_maxbytes":
		n, ok := svBytes(k.value)
		switch {
		case !ok:
			c.errorf(src, "want a size such as 50MB, got %q", k.value)
		case ct.Log == nil:
			c.mapped[src.Path] = true // no file, nothing to rotate
		case n == 0:
			c.drop(p+".log", src, "tend always rotates: at max_size_mb")
		default:
			ct.Log.MaxSizeMb = spec.Some(int(math.Ceil(float64(n) / (1 << 20))))
			c.approx(p+".log.max_size_mb", src, "rounded up to whole MiB")
		}
	case "stdout_logfile_backups":
		v := svInt(c, sec, k)
		switch {
		case ct.Log == nil:
			c.mapped[src.Path] = true
		case v < 1:
			c.drop(p+".log", src, "tend keeps at least one rotated file")
		default:
			ct.Log.MaxFiles = spec.Some(v)
			c.from(p+".log.max_files", src)
		}
	default: // stderr rotation
		if stdoutLog == "" {
			c.mapped[src.Path] = true
		} else {
			c.drop(p+".log", src, "the one log.file rotates by stdout_logfile's settings")
		}
	}
}

// svBytes parses supervisord's byte sizes: 1024, 50KB, 50MB, 1GB.
func svBytes(v string) (int64, bool) {
	mult := int64(1)
	u := strings.ToUpper(strings.TrimSpace(v))
	for suffix, m := range map[string]int64{"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30} {
		if strings.HasSuffix(u, suffix) {
			u, mult = strings.TrimSuffix(u, suffix), m
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(u), 10, 64)
	return n * mult, err == nil && n >= 0
}

// svEnvironment parses KEY="value",KEY2=value2.
func (c *conv) svEnvironment(k iniKey, src Source, p string, x svExpander) []spec.EnvVar {
	var env []spec.EnvVar
	s := k.value
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			c.errorf(src, "want KEY=value pairs separated by commas, got %q", s)
			return env
		}
		name := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t\n")
		var value string
		if len(s) > 0 && (s[0] == '"' || s[0] == '\'') {
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 {
				c.errorf(src, "%s: unterminated quote", name)
				return env
			}
			value, s = s[1:end+1], s[end+2:]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			value, s = strings.TrimSpace(s[:end]), s[end:]
		}
		s = strings.TrimLeft(strings.TrimSpace(s), ",")
		ep := fmt.Sprintf("%s.env[%d]", p, len(env))
		env = append(env, spec.EnvVar{Name: name, Value: x.subst(value, src, ep+".value")})
		c.from(ep, src)
	}
	return env
}

// svExpander expands supervisord's %(name)s expressions for one process.
type svExpander struct {
	c    *conv
	vars map[string]any
}

// command expands for a command: here and host_node_name become tend's variables.
func (x svExpander) command(v string, src Source, path string) string {
	return x.subst(v, src, path)
}

// subst expands for a field with {VAR} substitution (commands, env values,
// working_dir, user).
func (x svExpander) subst(v string, src Source, path string) string {
	return x.expand(v, src, path, func(name string) (string, bool) {
		switch name {
		case "here":
			return "{BSCONFIG_IDIR}", true
		case "host_node_name":
			return "{BSCONFIG_IHOST}", true
		}
		return "", false
	})
}

// plain expands for a field without substitution (names, log files).
func (x svExpander) plain(v string, src Source, path string) string {
	out := x.expand(v, src, path, func(name string) (string, bool) {
		if name == "here" {
			return ".", true // relative paths are relative to instance.dir, the file's directory
		}
		return "", false
	})
	return strings.NewReplacer("{{", "{", "}}", "}").Replace(out)
}

// expand replaces %(name)s as supervisord does when it reads its file: ENV_X from
// tend's environment (unset: an error naming it), the program's own names, and what
// tendVar says a name becomes in tend terms. ENV_X, here and program_name each say
// so in a warning. Literal text has its braces escaped. An expression tend cannot
// reproduce is left as it is with a warning.
func (x svExpander) expand(v string, src Source, path string, tendVar func(name string) (string, bool)) string {
	var b strings.Builder
	last := 0
	for _, m := range svExpansionRe().FindAllStringSubmatchIndex(v, -1) {
		b.WriteString(literal(v[last:m[0]]))
		last = m[1]
		if v[m[0]:m[1]] == "%%" {
			b.WriteString("%")
			continue
		}
		name, flags, verb := v[m[2]:m[3]], v[m[4]:m[5]], v[m[6]:m[7]]
		expr := v[m[0]:m[1]]
		if env, ok := strings.CutPrefix(name, "ENV_"); ok {
			val, set := x.c.environ[env]
			if !set {
				x.c.errorf(src, "%s: %s is not set in tend's environment (supervisord expands it when it reads the file; so does tend)", expr, env)
				continue
			}
			x.c.warn(path, src, fmt.Sprintf("%s expanded from tend's environment as the file was read ($%s, %d characters)", expr, env, len(val)))
			b.WriteString(literal(fmt.Sprintf("%"+flags+map[string]string{"s": "v", "d": "d"}[verb], val)))
			continue
		}
		if val, ok := x.vars[name]; ok {
			text := fmt.Sprintf("%"+flags+map[string]string{"s": "v", "d": "d"}[verb], val)
			if name == "program_name" {
				x.c.warn(path, src, fmt.Sprintf("%s expanded: %s", expr, text))
			}
			b.WriteString(literal(text))
			continue
		}
		if t, ok := tendVar(name); ok {
			if name == "here" {
				x.c.warn(path, src, fmt.Sprintf("%s expanded: %s (the file's directory)", expr, t))
			}
			b.WriteString(t)
			continue
		}
		x.c.approx(path, src, "%%(%s)%s cannot be expanded here: left as it is", name, verb)
		b.WriteString(literal(v[m[0]:m[1]]))
	}
	b.WriteString(literal(v[last:]))
	return b.String()
}
