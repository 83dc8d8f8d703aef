package spec

import (
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Compiled on first use, not at start-up: every tend command (and `tend run`'s
// time to its first container) would otherwise pay for them.
var (
	checksumRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(EMPTY:|MD5:[0-9a-fA-F]{32}|SHA256:[0-9a-fA-F]{64})$`)
	})
	checkPeriodRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,5}d[0-9]{1,5}h[0-9]{1,5}m$`) })
)

// URL schemes: the ones tend fetches, and the ones it skips.
var (
	fetchSchemes = map[string]bool{"http": true, "https": true, "file": true}
	skipSchemes  = map[string]bool{"rbtorrent": true, "sbr": true}
)

// Handler kinds, as the fields are named.
const (
	kindHTTP   = "http_get"
	kindTCP    = "tcp_socket"
	kindExec   = "exec"
	kindSignal = "unix_signal"
	kindNotify = "notify"
	kindLog    = "log_line"
)

// Handler kinds by place: liveness probes, readiness and startup probes.
var (
	livenessKinds  = []string{kindHTTP, kindTCP, kindExec}
	readinessKinds = []string{kindHTTP, kindTCP, kindExec, kindNotify, kindLog}
)

// Bounds of notify: {fd: N}: 0-2 are stdin, stdout and stderr; a descriptor is
// passed as the Nth of a list of N+1, so it stays under the usual open-file limit.
const (
	minNotifyFD = 3
	maxNotifyFD = 1023
)

// Headers an http_get may not set: tend frames the request and manages its connection.
var framingHeaders = []string{"Connection", "Content-Length", "Keep-Alive", "TE", "Trailer", "Transfer-Encoding", "Upgrade"}

// checker validates a defaulted spec and substitutes {VAR}s in place, recording every
// problem in c. Substitution happens field by field during the walk, so a field whose
// substitution failed is not checked further (no "not a number" after "unknown variable").
type checker struct {
	c    *collector
	vars *variables
	s    *Spec
}

func (k *checker) check() {
	s := k.s
	in := &s.Instance
	if in.Name == "" {
		k.c.addf("instance.name", "must be set (the hostname is unknown)")
	}
	if port := in.Port.Get(); in.Port.IsSet() && (port < 1 || port > 65535) {
		k.c.addf("instance.port", "must be a port number 1-65535, got %d", port)
	}
	k.nonNegative("instance.init_timeout_ms", in.InitTimeoutMs)
	k.oneOf("instance.cgroups", in.Cgroups, CgroupsAuto, CgroupsRequired, CgroupsOff)
	k.revisions(in)

	k.env("env", s.Env)
	for i, f := range s.EnvFiles {
		if strings.TrimSpace(f) == "" {
			k.c.addf(index("env_files", i), "must be a file name")
		}
	}
	targets := map[string]string{} // absolute resource path -> field path
	k.resources(targets)
	k.dynamicResources(targets)
	k.files(targets)

	names := map[string]string{}
	for i := range s.InitContainers {
		ic := &s.InitContainers[i]
		path := index("init_containers", i)
		k.name(join(path, "name"), ic.Name, "container", names)
		k.oneOf(join(path, "at"), ic.At, AtActivate, AtInstall)
		k.vars.revisionDir = ic.At == AtInstall // {REVISION_DIR} is theirs alone
		k.command(join(path, "command"), &ic.Command)
		k.subst(join(path, "working_dir"), &ic.WorkingDir)
		k.env(join(path, "env"), ic.Env)
		k.vars.revisionDir = false
		k.timeLimit(join(path, "time_limit"), ic.TimeLimit)
	}
	logs := map[string]string{}
	addrs := map[string]string{} // socket address -> field path
	for i := range s.Containers {
		path := index("containers", i)
		k.container(path, &s.Containers[i], names)
		k.sockets(path, &s.Containers[i], addrs)
		if l := s.Containers[i].Log; l != nil && l.File != "" {
			abs := s.WorkDir(l.File)
			if first, dup := logs[abs]; dup {
				k.c.addf(join(path, "log.file"), "%s is also the log file of %s", abs, first)
			}
			logs[abs] = path
		}
	}
	k.dependencies()
}

// target records that the field at path puts a resource at p; two fields may not
// (targets: absolute path -> field path).
func (k *checker) target(targets map[string]string, path, p string) {
	abs := k.s.WorkDir(p)
	if first, dup := targets[abs]; dup {
		k.c.addf(path, "%s is also the target of %s", abs, first)
		return
	}
	targets[abs] = path
}

// resources checks the static resources.
func (k *checker) resources(targets map[string]string) {
	names := map[string]string{}
	uuids := map[string]int{} // uuid -> index of its first resource
	for i := range k.s.Resources {
		r := &k.s.Resources[i]
		path := index("resources", i)
		if k.name(join(path, "name"), r.Name, "resource", names) {
			if r.Name == "." || r.Name == ".." {
				k.c.addf(join(path, "name"), "must be a file name, got %q", r.Name)
			} else {
				k.target(targets, join(path, "name"), r.Name)
			}
		}
		k.urls(join(path, "urls"), r.URLs)
		k.checksum(join(path, "checksum"), r.Checksum)
		if !checkPeriodRe().MatchString(r.CheckPeriod) {
			k.c.addf(join(path, "check_period"), "must look like 0d1h0m (<days>d<hours>h<minutes>m), got %q", r.CheckPeriod)
		}
		k.uuid(path, i, uuids)
	}
}

// uuid checks resources[i].uuid: resources with the same uuid are the same content,
// so they may not say otherwise (another checksum, one extracted and one not).
func (k *checker) uuid(path string, i int, uuids map[string]int) {
	r := &k.s.Resources[i]
	switch {
	case r.UUID == "":
		return
	case strings.TrimSpace(r.UUID) != r.UUID || strings.ContainsAny(r.UUID, "\x00\n\r"):
		k.c.addf(join(path, "uuid"), "must not have leading or trailing spaces or control characters, got %q", r.UUID)
		return
	}
	first, seen := uuids[r.UUID]
	if !seen {
		uuids[r.UUID] = i
		return
	}
	o := &k.s.Resources[first]
	switch {
	case o.Checksum != r.Checksum && o.Checksum != DefaultChecksum && r.Checksum != DefaultChecksum:
		k.c.addf(join(path, "uuid"), "%q is also the uuid of resources[%d] (%s), whose checksum %s differs from %s: the same uuid is the same content", r.UUID, first, o.Name, o.Checksum, r.Checksum)
	case o.Extract != r.Extract:
		k.c.addf(join(path, "uuid"), "%q is also the uuid of resources[%d] (%s), which is extracted where this one is not (or the other way round): the same uuid is the same content", r.UUID, first, o.Name)
	}
}

// dynamicResources checks the dynamic resources: storage_dir and destination are
// each one resource's.
func (k *checker) dynamicResources(targets map[string]string) {
	names := map[string]string{}
	storages := map[string]string{}
	for i := range k.s.DynamicResources {
		d := &k.s.DynamicResources[i]
		path := index("dynamic_resources", i)
		k.name(join(path, "name"), d.Name, "dynamic resource", names)
		if d.Revision < 0 {
			k.c.addf(join(path, "revision"), "must not be negative, got %d", d.Revision)
		}
		k.urls(join(path, "urls"), d.URLs)
		k.checksum(join(path, "checksum"), d.Checksum)
		if d.StorageDir == "" {
			k.c.addf(join(path, "storage_dir"), "must be set")
		} else if abs := k.s.WorkDir(d.StorageDir); storages[abs] != "" {
			k.c.addf(join(path, "storage_dir"), "%s is also the storage_dir of %s", abs, storages[abs])
		} else {
			storages[abs] = path
		}
		if d.Destination == "" {
			k.c.addf(join(path, "destination"), "must be set")
		} else {
			k.target(targets, join(path, "destination"), d.Destination)
		}
		k.atLeast(join(path, "cached_revisions_count"), d.CachedRevisionsCount.Get(), 1)
		if d.Verify != nil {
			k.policy(join(path, "verify"), d.Verify)
		}
	}
}

func (k *checker) container(path string, c *Container, names map[string]string) {
	k.name(join(path, "name"), c.Name, "container", names)
	k.command(join(path, "command"), &c.Command)
	k.subst(join(path, "working_dir"), &c.WorkingDir)
	k.env(join(path, "env"), c.Env)
	for i := range c.Init {
		p := index(join(path, "init"), i)
		k.command(join(p, "command"), &c.Init[i].Command)
		k.timeLimit(join(p, "time_limit"), c.Init[i].TimeLimit)
	}

	k.restartPolicy(join(path, "restart_policy"), c.RestartPolicy)
	k.nonNegative(join(path, "max_run_ms"), c.MaxRunMs)
	k.schedule(join(path, "schedule"), c)

	for _, probe := range []struct {
		field string
		p     *Probe
		kinds []string
	}{
		{"liveness_probe", c.LivenessProbe, livenessKinds},
		{"readiness_probe", c.ReadinessProbe, readinessKinds},
		{"startup_probe", c.StartupProbe, readinessKinds},
	} {
		if probe.p == nil {
			continue
		}
		p := join(path, probe.field)
		k.handler(p, &probe.p.Handler, true, probe.kinds...)
		k.timeLimit(join(p, "time_limit"), probe.p.TimeLimit)
		k.atLeast(join(p, "failure_threshold"), probe.p.FailureThreshold.Get(), 1)
		k.atLeast(join(p, "success_threshold"), probe.p.SuccessThreshold.Get(), 1)
	}

	sp, spPath := c.StopPolicy, join(path, "stop_policy")
	k.handler(spPath, &sp.Handler, false, kindHTTP, kindExec, kindSignal)
	k.atLeast(join(spPath, "max_tries"), sp.MaxTries.Get(), 1)
	k.timeLimit(join(spPath, "time_limit"), sp.TimeLimit)
	k.nonNegative(join(spPath, "wait_after_ms"), sp.WaitAfterMs)
	k.nonNegative(join(spPath, "term_timeout_ms"), sp.TermTimeoutMs)

	k.oneOf(join(path, "term_barrier"), c.TermBarrier, BarrierWait, BarrierIgnore)
	if c.DestroyPolicy != nil {
		k.policy(join(path, "destroy_policy"), c.DestroyPolicy)
	}
	for i := range c.NotifyActions {
		k.policy(index(join(path, "notify_actions"), i), &c.NotifyActions[i])
	}
	k.oneOf(join(path, "target_state"), c.TargetState, TargetActive, TargetRemoved)
	if l := c.Log; l != nil {
		// A log section only for keep_lines (written in the document) needs no file.
		if _, keepOnly := k.c.lines[join(path, "log.keep_lines")]; strings.TrimSpace(l.File) == "" && !keepOnly {
			k.c.addf(join(path, "log.file"), "must be set")
		}
		k.atLeast(join(path, "log.keep_lines"), l.KeepLines.Get(), 0)
		k.atLeast(join(path, "log.max_size_mb"), l.MaxSizeMb.Get(), 1)
		k.atLeast(join(path, "log.max_files"), l.MaxFiles.Get(), 1)
	}
}

// restartPolicy checks a container's restart_policy.
func (k *checker) restartPolicy(path string, rp *RestartPolicy) {
	k.nonNegative(join(path, "min_period_ms"), rp.MinPeriodMs)
	if k.nonNegative(join(path, "max_period_ms"), rp.MaxPeriodMs) && rp.MaxPeriodMs.Get() < rp.MinPeriodMs.Get() {
		k.c.addf(join(path, "max_period_ms"), "must be at least min_period_ms (%d), got %d", rp.MinPeriodMs.Get(), rp.MaxPeriodMs.Get())
	}
	k.backoff(join(path, "backoff"), rp.Backoff.Get())
	k.nonNegative(join(path, "max_jitter_ms"), rp.MaxJitterMs)
	k.nonNegative(join(path, "stable_after_ms"), rp.StableAfterMs)
	k.oneOf(join(path, "mode"), rp.Mode, RestartModeNames()...)
	if rp.MaxFailures.Get() < 0 {
		k.c.addf(join(path, "max_failures"), "must not be negative (0: unlimited), got %d", rp.MaxFailures.Get())
	}
	k.oneOf(join(path, "on_give_up"), rp.OnGiveUp, GiveUpStop, GiveUpShutdown)
}

// policy checks a destroy policy, notify action or verify: http_get or exec.
func (k *checker) policy(path string, p *Policy) {
	k.handler(path, &p.Handler, true, kindHTTP, kindExec)
	k.atLeast(join(path, "max_tries"), p.MaxTries.Get(), 1)
	k.timeLimit(join(path, "time_limit"), p.TimeLimit)
}

// handler checks that h names exactly one allowed kind (at most one when !required),
// substitutes its fields and checks them.
func (k *checker) handler(path string, h *Handler, required bool, allowed ...string) {
	set := map[string]bool{
		kindHTTP: h.HTTPGet != nil, kindTCP: h.TCPSocket != nil,
		kindExec: h.Exec != nil, kindSignal: h.UnixSignal != nil,
		kindNotify: h.Notify != nil, kindLog: h.LogLine.IsSet(),
	}
	var present, refused []string
	for _, kind := range []string{kindHTTP, kindTCP, kindExec, kindSignal, kindNotify, kindLog} {
		if !set[kind] {
			continue
		}
		switch {
		case contains(allowed, kind):
			present = append(present, kind)
			continue
		case kind == kindNotify || kind == kindLog:
			k.c.addf(join(path, kind), "%s is only for readiness_probe and startup_probe", kind)
		default:
			k.c.addf(join(path, kind), "not allowed here (use %s)", orList(allowed))
		}
		refused = append(refused, kind)
	}
	switch {
	case len(present) > 1:
		k.c.addf(path, "has both %s and %s; %s one of %s", present[0], present[1],
			map[bool]string{true: "exactly", false: "at most"}[required], orList(allowed))
		return
	case len(present) == 0 && len(refused) > 0:
		return // what to use instead is said already
	case len(present) == 0 && required:
		k.c.addf(path, "needs one of %s", orList(allowed))
		return
	}
	k.handlerFields(path, h)
}

// handlerFields substitutes and checks the fields of h's one kind.
func (k *checker) handlerFields(path string, h *Handler) {
	if g := h.HTTPGet; g != nil {
		k.oneOf(join(path, "http_get.scheme"), g.Scheme, SchemeHTTP, SchemeHTTPS)
		k.port(join(path, "http_get.port"), &g.Port)
		if k.subst(join(path, "http_get.path"), &g.Path) && !strings.HasPrefix(g.Path, "/") {
			k.c.addf(join(path, "http_get.path"), "must start with /, got %q", g.Path)
		}
		k.headers(join(path, "http_get.headers"), g.Headers)
	}
	if t := h.TCPSocket; t != nil {
		k.port(join(path, "tcp_socket.port"), &t.Port)
	}
	if e := h.Exec; e != nil {
		k.command(join(path, "exec.command"), &e.Command)
	}
	if n := h.Notify; n != nil {
		if n.WatchdogMs.IsSet() && n.WatchdogMs.Get() < 1 {
			k.c.addf(join(path, "notify.watchdog_ms"), "must be at least 1, got %d", n.WatchdogMs.Get())
		}
		if n.FD.IsSet() && (n.FD.Get() < minNotifyFD || n.FD.Get() > maxNotifyFD) {
			k.c.addf(join(path, "notify.fd"), "must be a file descriptor %d-%d (0-2 are stdin, stdout, stderr), got %d", minNotifyFD, maxNotifyFD, n.FD.Get())
		}
		if n.FD.IsSet() && n.WatchdogMs.IsSet() {
			k.c.addf(join(path, "notify"), "has both fd (s6's protocol) and watchdog_ms (systemd's); s6's protocol has no watchdog")
		}
	}
	if h.LogLine.IsSet() {
		if h.LogLine.Get() == "" {
			k.c.addf(join(path, kindLog), "must not be empty (it would match every line)")
		} else if re, err := regexp.Compile(h.LogLine.Get()); err != nil {
			k.c.addf(join(path, kindLog), "not an RE2 expression: %v", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		} else {
			h.logLine = re
		}
	}
	if u := h.UnixSignal; u != nil {
		if _, canonical, ok := ParseSignal(u.Signal); ok {
			u.Signal = canonical
		} else {
			k.c.addf(join(path, "unix_signal.signal"), "unknown signal %q (a Linux signal name such as SIGINT or INT)", u.Signal)
		}
	}
}

// headers checks http_get headers: RFC 9110 token names, not one tend sets itself,
// and substituted values without CR, LF or NUL (which would end the header).
func (k *checker) headers(path string, headers []HTTPHeader) {
	for i := range headers {
		hd := &headers[i]
		p := index(path, i)
		switch {
		case !validToken(hd.Name):
			k.c.addf(join(p, "name"), "invalid header name %q (letters, digits and !#$%%&'*+-.^_`|~)", hd.Name)
		case containsFold(framingHeaders, hd.Name):
			k.c.addf(join(p, "name"), "%s cannot be set: tend frames the request and manages the connection", hd.Name)
		}
		if k.subst(join(p, "value"), &hd.Value) && strings.ContainsAny(hd.Value, "\r\n\x00") {
			k.c.addf(join(p, "value"), "must not contain CR, LF or NUL")
		}
	}
}

// validToken reports whether s is an RFC 9110 token: a header name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// command checks and substitutes a command; a string must split without errors.
func (k *checker) command(path string, c *Command) {
	if c.IsList {
		if len(c.List) == 0 {
			k.c.addf(path, "must not be empty")
			return
		}
		for i := range c.List {
			k.subst(index(path, i), &c.List[i])
		}
		if c.List[0] == "" {
			k.c.addf(index(path, 0), "must not be empty (it is the program to run)")
		}
		return
	}
	if strings.TrimSpace(c.String) == "" {
		k.c.addf(path, "must be set")
		return
	}
	if !k.subst(path, &c.String) {
		return
	}
	// Environment values are not known yet: a placeholder shows syntax errors
	// and a command that is empty whatever the environment.
	words, err := split(c.String, func(string) (string, bool) { return "x", true })
	switch {
	case err != nil:
		k.c.addf(path, "%v", err)
	case len(words) == 0 || words[0] == "":
		k.c.addf(path, "the program to run is empty")
	}
}

// port substitutes and checks a port: a number 1-65535, written back in decimal.
func (k *checker) port(path string, p *string) {
	if *p == "" {
		k.c.addf(path, "must be set (instance.port is not set)")
		return
	}
	port := k.s.Instance.Port
	if _, written := k.c.lines[path]; !written && port.IsSet() && (port.Get() < 1 || port.Get() > 65535) {
		return // taken from instance.port, whose error says what is wrong
	}
	if !k.subst(path, p) {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(*p))
	if err != nil || n < 1 || n > 65535 {
		k.c.addf(path, "must be a port number 1-65535, got %q", *p)
		return
	}
	*p = strconv.Itoa(n)
}

// subst substitutes {VAR}s in *p; false when it failed (and was reported).
func (k *checker) subst(path string, p *string) bool {
	over := k.vars.size > MaxExpanded
	out, err := k.vars.substitute(*p)
	if err != nil {
		if err != errTooLarge || !over { // said once, at the field that went over
			k.c.addf(path, "%v", err)
		}
		return false
	}
	*p = out
	return true
}

// env checks names and sources of an env list and substitutes its values.
func (k *checker) env(path string, vars []EnvVar) {
	seen := map[string]int{}
	for i := range vars {
		v := &vars[i]
		p := index(path, i)
		if !validEnvName(v.Name) {
			k.c.addf(join(p, "name"), "invalid variable name %q (letters, digits and _, not starting with a digit)", v.Name)
		} else if first, dup := seen[v.Name]; dup {
			k.c.addf(join(p, "name"), "duplicate variable %s (also %s)", v.Name, index(path, first))
		} else {
			seen[v.Name] = i
		}
		if v.ValueFrom != nil {
			if v.Value != "" {
				k.c.addf(p, "has both value and value_from; use one")
			}
			if strings.TrimSpace(v.ValueFrom.File) == "" {
				k.c.addf(join(p, "value_from.file"), "must be set")
			} else {
				k.subst(join(p, "value_from.file"), &v.ValueFrom.File) // {secrets_dir}/db/password
			}
			continue
		}
		k.subst(join(p, "value"), &v.Value)
	}
}

func (k *checker) timeLimit(path string, tl *TimeLimit) {
	k.nonNegative(join(path, "initial_delay_ms"), tl.InitialDelayMs)
	k.nonNegative(join(path, "min_restart_period_ms"), tl.MinRestartPeriodMs)
	if k.nonNegative(join(path, "max_restart_period_ms"), tl.MaxRestartPeriodMs) &&
		tl.MaxRestartPeriodMs.Get() < tl.MinRestartPeriodMs.Get() {
		k.c.addf(join(path, "max_restart_period_ms"), "must be at least min_restart_period_ms (%d), got %d",
			tl.MinRestartPeriodMs.Get(), tl.MaxRestartPeriodMs.Get())
	}
	k.nonNegative(join(path, "restart_period_scale_ms"), tl.RestartPeriodScaleMs)
	k.backoff(join(path, "restart_period_back_off"), tl.RestartPeriodBackOff.Get())
	k.nonNegative(join(path, "max_execution_time_ms"), tl.MaxExecutionTimeMs)
}

// backoff must be finite and at least 1: below 1 the delays would shrink with failures.
func (k *checker) backoff(path string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 1 {
		k.c.addf(path, "must be a number of at least 1, got %v", v)
	}
}

func (k *checker) nonNegative(path string, o Opt[int64]) bool {
	if o.Get() < 0 {
		k.c.addf(path, "must not be negative, got %d", o.Get())
		return false
	}
	return true
}

func (k *checker) atLeast(path string, v, least int) {
	if v < least {
		k.c.addf(path, "must be at least %d, got %d", least, v)
	}
}

func (k *checker) oneOf(path, v string, allowed ...string) {
	if !contains(allowed, v) {
		k.c.addf(path, "must be %s, got %q", orList(allowed), v)
	}
}

// validName reports whether name matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$. Written
// out rather than a regexp: every spec checks names, and compiling the regexp was a
// tenth of a millisecond of tend's start-up.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// name checks a name's syntax and uniqueness among names (name -> path of its owner).
func (k *checker) name(path, name, what string, names map[string]string) bool {
	if !validName(name) {
		if name == "" {
			k.c.addf(path, "must be set")
		} else {
			k.c.addf(path, "invalid %s name %q (up to 63 letters, digits, '.', '_', '-', starting with a letter or digit)", what, name)
		}
		return false
	}
	if first, dup := names[name]; dup {
		k.c.addf(path, "duplicate %s name %q (also %s)", what, name, first)
		return false
	}
	names[name] = parent(path)
	return true
}

func (k *checker) checksum(path, v string) {
	if !checksumRe().MatchString(v) {
		k.c.addf(path, "must be EMPTY:, MD5:<32 hex digits> or SHA256:<64 hex digits>, got %q", v)
	}
}

// urls checks a resource's URLs: known schemes, at least one tend can fetch.
func (k *checker) urls(path string, urls []string) {
	if len(urls) == 0 {
		k.c.addf(path, "must list at least one http, https or file URL")
		return
	}
	fetchable := false
	for i, u := range urls {
		p := index(path, i)
		scheme, _, ok := strings.Cut(u, ":")
		scheme = strings.ToLower(scheme)
		switch {
		case !ok:
			k.c.addf(p, "not a URL: %q", u)
		case skipSchemes[scheme]:
		case fetchSchemes[scheme]:
			parsed, err := url.Parse(u)
			switch {
			case err != nil:
				k.c.addf(p, "bad URL: %v", err)
			case scheme != "file" && parsed.Host == "":
				k.c.addf(p, "no host in %q", u)
			case scheme == "file" && parsed.Path == "":
				k.c.addf(p, "no path in %q", u)
			default:
				fetchable = true
			}
		default:
			k.c.addf(p, "unsupported URL scheme %q (http, https, file; rbtorrent and sbr are skipped)", scheme)
		}
	}
	if !fetchable {
		k.c.addf(path, "no http, https or file URL (rbtorrent: and sbr: URLs are skipped)")
	}
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// orList writes "a, b or c".
func orList(list []string) string {
	if len(list) == 1 {
		return list[0]
	}
	return strings.Join(list[:len(list)-1], ", ") + " or " + list[len(list)-1]
}

// WorkDir is the absolute directory for a working_dir (or any path in the spec):
// "" is instance.dir, a relative path is relative to it.
func (s *Spec) WorkDir(dir string) string {
	if dir == "" {
		return s.Instance.Dir
	}
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(s.Instance.Dir, dir)
}

// PortNumber is the port as a number; valid after Load (0 before).
func (h HTTPGet) PortNumber() int { return portNumber(h.Port) }

// PortNumber is the port as a number; valid after Load (0 before).
func (t TCPSocket) PortNumber() int { return portNumber(t.Port) }

func portNumber(p string) int {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0
	}
	return n
}
