package spec

import (
	"path/filepath"
	"strconv"
)

// Defaults of docs/reference.md "Fields and defaults" that are not per-context time limits.
const (
	DefaultRestartMinPeriodMs   = 1000
	DefaultRestartMaxPeriodMs   = 60000
	DefaultRestartBackoff       = 2.0
	DefaultRestartMaxJitterMs   = 1000
	DefaultRestartStableAfterMs = 60000
	DefaultTermTimeoutMs        = 30000
	DefaultWaitAfterMs          = 0
	DefaultMaxTries             = 1
	DefaultThreshold            = 1
	DefaultHTTPHost             = "localhost"
	DefaultHTTPPath             = "/"
	DefaultTCPHost              = "::1"
	DefaultLogMaxSizeMb         = 100
	DefaultLogMaxFiles          = 5
	DefaultKeepLines            = 1000 // also without a log section: see Container.KeepLines
	DefaultChecksum             = "EMPTY:"
	DefaultCheckPeriod          = "0d0h0m"
	DefaultCachedRevisions      = 3
	DefaultMaxFailures          = 0 // unlimited
	DefaultMaxRunMs             = 0 // no deadline
	DefaultAffectsReadiness     = true
)

// timeLimitDefaults are the TTimeLimit defaults of one context (docs/reference.md "Fields and defaults"); the
// scale is 0 and the back-off 1 everywhere, so the period is fixed unless given.
type timeLimitDefaults struct {
	initialDelayMs, minPeriodMs, maxPeriodMs, maxExecutionMs int64
}

var (
	probeTimeLimit   = timeLimitDefaults{5000, 5000, 60000, 1000}
	initTimeLimit    = timeLimitDefaults{0, 1000, 60000, 0} // init containers and init commands; 0: no limit
	handlerTimeLimit = timeLimitDefaults{0, 1000, 60000, 10000}
)

// applyDefaults is the one place where defaults are written: afterwards every Opt
// with a default IsSet, and a present field keeps its value, 0 included.
// specDir is the absolute directory of the spec file.
func applyDefaults(s *Spec, hostname, specDir string) {
	in := &s.Instance
	if in.Name == "" {
		in.Name = hostname
	}
	switch {
	case in.Dir == "":
		in.Dir = specDir
	case !filepath.IsAbs(in.Dir):
		in.Dir = filepath.Join(specDir, in.Dir)
	default:
		in.Dir = filepath.Clean(in.Dir)
	}
	setDefault(&in.InitTimeoutMs, 0)
	setString(&in.Cgroups, CgroupsAuto)
	setDefault(&in.KeepRevisions, DefaultKeepRevisions)
	setString(&in.Activate, ActivateAuto)
	setString(&in.RollbackAfter, DefaultRollbackAfter)

	for i := range s.Resources {
		r := &s.Resources[i]
		setString(&r.Checksum, DefaultChecksum)
		setString(&r.CheckPeriod, DefaultCheckPeriod)
	}
	for i := range s.DynamicResources {
		d := &s.DynamicResources[i]
		setString(&d.Checksum, DefaultChecksum)
		setDefault(&d.CachedRevisionsCount, DefaultCachedRevisions)
		if d.Verify != nil {
			defaultPolicy(d.Verify, in.Port)
		}
	}
	for i := range s.Files {
		setString(&s.Files[i].Mode, DefaultFileMode)
	}
	for i := range s.InitContainers {
		s.InitContainers[i].TimeLimit = defaultTimeLimit(s.InitContainers[i].TimeLimit, initTimeLimit)
		setString(&s.InitContainers[i].At, AtActivate)
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i], in.Port)
	}
}

func defaultContainer(c *Container, port Opt[int]) {
	for i := range c.Init {
		c.Init[i].TimeLimit = defaultTimeLimit(c.Init[i].TimeLimit, initTimeLimit)
	}

	if c.RestartPolicy == nil {
		c.RestartPolicy = &RestartPolicy{}
	}
	rp := c.RestartPolicy
	setDefault(&rp.MinPeriodMs, DefaultRestartMinPeriodMs)
	setDefault(&rp.MaxPeriodMs, DefaultRestartMaxPeriodMs)
	setDefault(&rp.Backoff, DefaultRestartBackoff)
	setDefault(&rp.MaxJitterMs, DefaultRestartMaxJitterMs)
	setDefault(&rp.StableAfterMs, DefaultRestartStableAfterMs)
	setString(&rp.Mode, ModeAlways)
	setDefault(&rp.MaxFailures, DefaultMaxFailures)
	setString(&rp.OnGiveUp, GiveUpStop)
	setDefault(&c.MaxRunMs, DefaultMaxRunMs)
	setDefault(&c.AffectsReadiness, DefaultAffectsReadiness)

	for _, p := range []*Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		defaultHandler(&p.Handler, port)
		p.TimeLimit = defaultTimeLimit(p.TimeLimit, probeTimeLimit)
		setDefault(&p.FailureThreshold, DefaultThreshold)
		setDefault(&p.SuccessThreshold, DefaultThreshold)
	}

	if c.StopPolicy == nil {
		c.StopPolicy = &StopPolicy{}
	}
	sp := c.StopPolicy
	defaultHandler(&sp.Handler, port)
	setDefault(&sp.MaxTries, DefaultMaxTries)
	sp.TimeLimit = defaultTimeLimit(sp.TimeLimit, handlerTimeLimit)
	setDefault(&sp.WaitAfterMs, DefaultWaitAfterMs)
	setDefault(&sp.TermTimeoutMs, DefaultTermTimeoutMs)

	setString(&c.TermBarrier, BarrierIgnore)
	if c.DestroyPolicy != nil {
		defaultPolicy(c.DestroyPolicy, port)
	}
	for i := range c.NotifyActions {
		defaultPolicy(&c.NotifyActions[i], port)
	}
	setString(&c.TargetState, TargetActive)
	defaultSockets(c)
	if c.Log != nil {
		setDefault(&c.Log.MaxSizeMb, DefaultLogMaxSizeMb)
		setDefault(&c.Log.MaxFiles, DefaultLogMaxFiles)
		setDefault(&c.Log.KeepLines, DefaultKeepLines)
	}
}

func defaultPolicy(p *Policy, port Opt[int]) {
	defaultHandler(&p.Handler, port)
	setDefault(&p.MaxTries, DefaultMaxTries)
	p.TimeLimit = defaultTimeLimit(p.TimeLimit, handlerTimeLimit)
}

// defaultHandler fills http_get schemes, and http_get and tcp_socket hosts, paths and
// ports (port: instance.port).
func defaultHandler(h *Handler, port Opt[int]) {
	instancePort := ""
	if port.IsSet() {
		instancePort = strconv.Itoa(port.Get())
	}
	if g := h.HTTPGet; g != nil {
		setString(&g.Scheme, SchemeHTTP)
		setString(&g.Host, DefaultHTTPHost)
		setString(&g.Path, DefaultHTTPPath)
		setString(&g.Port, instancePort)
	}
	if t := h.TCPSocket; t != nil {
		setString(&t.Host, DefaultTCPHost)
		setString(&t.Port, instancePort)
	}
}

func defaultTimeLimit(tl *TimeLimit, d timeLimitDefaults) *TimeLimit {
	if tl == nil {
		tl = &TimeLimit{}
	}
	setDefault(&tl.InitialDelayMs, d.initialDelayMs)
	setDefault(&tl.MinRestartPeriodMs, d.minPeriodMs)
	setDefault(&tl.MaxRestartPeriodMs, d.maxPeriodMs)
	setDefault(&tl.RestartPeriodScaleMs, 0)
	setDefault(&tl.RestartPeriodBackOff, 1)
	setDefault(&tl.MaxExecutionTimeMs, d.maxExecutionMs)
	return tl
}

// setDefault sets an absent field to v; a present one keeps its value, 0 included.
func setDefault[T optValue](o *Opt[T], v T) {
	if !o.IsSet() {
		*o = Some(v)
	}
}

func setString(p *string, v string) {
	if *p == "" {
		*p = v
	}
}
