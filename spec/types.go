// Package spec is the instance spec: its schema, loading, defaults, validation and
// {VAR} substitution. It is data and pure functions; everything else receives a
// validated, resolved *Spec and never writes defaults of its own.
package spec

import "regexp"

// Spec is one instance spec document (docs/reference.md "The spec"). Optional numbers
// and strings are Opt values so that a present 0 is told apart from an absent field;
// after Load every one that has a default IsSet.
type Spec struct {
	Instance         Instance          `yaml:"instance" json:"instance"`
	Env              []EnvVar          `yaml:"env,omitempty" json:"env,omitempty"`
	EnvFiles         []string          `yaml:"env_files,omitempty" json:"env_files,omitempty"`
	Resources        []Resource        `yaml:"resources,omitempty" json:"resources,omitempty"`
	DynamicResources []DynamicResource `yaml:"dynamic_resources,omitempty" json:"dynamic_resources,omitempty"`
	Files            []File            `yaml:"files,omitempty" json:"files,omitempty"`
	InitContainers   []InitContainer   `yaml:"init_containers,omitempty" json:"init_containers,omitempty"`
	Containers       []Container       `yaml:"containers" json:"containers"`

	// Filled by Load, not part of the document.
	path    string            // the spec file, for messages
	digest  [32]byte          // SHA-256 of the file's bytes, for Revision
	inputs  [32]byte          // digest of the --var values and a keyed digest of the files read (revisionid.go)
	vars    map[string]string // every substitution variable, for Vars
	baseEnv []string          // tend's env + variables + cgroup limits + env_files + env, later wins
	baseAt  map[string]int    // the index of each key in baseEnv
	specEnv map[string]bool   // HOME, USER, LOGNAME when env_files or env set them (identity.go)
}

// Instance is the instance-wide section.
type Instance struct {
	Name          string            `yaml:"name,omitempty" json:"name,omitempty"`
	Dir           string            `yaml:"dir,omitempty" json:"dir,omitempty"`
	Port          Opt[int]          `yaml:"port,omitempty" json:"port,omitzero"`
	Vars          map[string]string `yaml:"vars,omitempty" json:"vars,omitempty"`
	InitTimeoutMs Opt[int64]        `yaml:"init_timeout_ms,omitempty" json:"init_timeout_ms,omitzero"`
	// User, Group and Rlimits are every container's default (identity.go).
	User    string            `yaml:"user,omitempty" json:"user,omitempty"`
	Group   string            `yaml:"group,omitempty" json:"group,omitempty"`
	Rlimits map[string]Rlimit `yaml:"rlimits,omitempty" json:"rlimits,omitempty"`
	// Cgroups says whether containers get cgroups (CgroupsAuto, the default,
	// CgroupsRequired, CgroupsOff); Limits are all containers' and init containers'
	// together (docs/reference.md "Cgroups and limits", limits.go).
	Cgroups string `yaml:"cgroups,omitempty" json:"cgroups,omitempty"`
	Limits  Limits `yaml:"limits,omitempty" json:"limits,omitzero"`
	// Revision names this spec among the instance's revisions; KeepRevisions,
	// Activate and RollbackAfter say how revisions are kept and switched
	// (docs/reference.md "Updates and rollback").
	Revision      string   `yaml:"revision,omitempty" json:"revision,omitempty"`
	KeepRevisions Opt[int] `yaml:"keep_revisions,omitempty" json:"keep_revisions,omitzero"`
	Activate      string   `yaml:"activate,omitempty" json:"activate,omitempty"`
	RollbackAfter string   `yaml:"rollback_after,omitempty" json:"rollback_after,omitempty"`
	// CacheMaxBytes bounds <instance.dir>/.tend/cache, where removed cached: true
	// resources are kept; the least recently used go first. Unset: no bound.
	CacheMaxBytes Bytes `yaml:"cache_max_bytes,omitempty" json:"cache_max_bytes,omitzero"`

	ident *Identity // resolved by Load (identity.go)
}

// EnvVar is one environment variable: a literal value or a secret read from a file.
type EnvVar struct {
	Name      string     `yaml:"name" json:"name"`
	Value     string     `yaml:"value,omitempty" json:"value,omitempty"`
	ValueFrom *ValueFrom `yaml:"value_from,omitempty" json:"value_from,omitempty"`

	secret string // the value read from ValueFrom.File by Load
}

// ValueFrom names where a secret value is read from. Secrets are never logged or rendered.
type ValueFrom struct {
	File string `yaml:"file" json:"file"`
}

// Command is a command line: a string (split like a POSIX word list, never run by a
// shell) or a list used as is. IsList tells which form the document used.
type Command struct {
	String string
	List   []string
	IsList bool
}

// TimeLimit is pod_agent's TTimeLimit (docs/reference.md "Fields and defaults"). MaxExecutionTimeMs 0 means no limit.
type TimeLimit struct {
	InitialDelayMs       Opt[int64]   `yaml:"initial_delay_ms,omitempty" json:"initial_delay_ms,omitzero"`
	MinRestartPeriodMs   Opt[int64]   `yaml:"min_restart_period_ms,omitempty" json:"min_restart_period_ms,omitzero"`
	MaxRestartPeriodMs   Opt[int64]   `yaml:"max_restart_period_ms,omitempty" json:"max_restart_period_ms,omitzero"`
	RestartPeriodScaleMs Opt[int64]   `yaml:"restart_period_scale_ms,omitempty" json:"restart_period_scale_ms,omitzero"`
	RestartPeriodBackOff Opt[float64] `yaml:"restart_period_back_off,omitempty" json:"restart_period_back_off,omitzero"`
	MaxExecutionTimeMs   Opt[int64]   `yaml:"max_execution_time_ms,omitempty" json:"max_execution_time_ms,omitzero"`
}

// InitContainer runs once, in order, before any container (docs/reference.md "Preparing").
type InitContainer struct {
	Name       string            `yaml:"name" json:"name"`
	Command    Command           `yaml:"command" json:"command"`
	WorkingDir string            `yaml:"working_dir,omitempty" json:"working_dir,omitempty"`
	Env        []EnvVar          `yaml:"env,omitempty" json:"env,omitempty"`
	TimeLimit  *TimeLimit        `yaml:"time_limit,omitempty" json:"time_limit,omitempty"`
	User       string            `yaml:"user,omitempty" json:"user,omitempty"`
	Group      string            `yaml:"group,omitempty" json:"group,omitempty"`
	Rlimits    map[string]Rlimit `yaml:"rlimits,omitempty" json:"rlimits,omitempty"`
	// At is when it runs: AtActivate (preparing the live instance) or AtInstall (in
	// the revision's store, while the active revision runs).
	At string `yaml:"at,omitempty" json:"at,omitempty"`

	// Timing is the shorthand of TimeLimit (shorthand.go).
	Timing `yaml:",inline" json:",inline"`

	ident *Identity // resolved by Load (identity.go)
}

// InitCommand is a per-container init command (pod_agent's workload init).
type InitCommand struct {
	Command   Command    `yaml:"command" json:"command"`
	TimeLimit *TimeLimit `yaml:"time_limit,omitempty" json:"time_limit,omitempty"`

	// Timing is the shorthand of TimeLimit (shorthand.go).
	Timing `yaml:",inline" json:",inline"`
}

// Container is one supervised process (docs/reference.md "Running").
type Container struct {
	Name           string         `yaml:"name" json:"name"`
	Command        Command        `yaml:"command" json:"command"`
	WorkingDir     string         `yaml:"working_dir,omitempty" json:"working_dir,omitempty"`
	Env            []EnvVar       `yaml:"env,omitempty" json:"env,omitempty"`
	Init           []InitCommand  `yaml:"init,omitempty" json:"init,omitempty"`
	RestartPolicy  *RestartPolicy `yaml:"restart_policy,omitempty" json:"restart_policy,omitempty"`
	MaxRunMs       Opt[int64]     `yaml:"max_run_ms,omitempty" json:"max_run_ms,omitzero"`
	LivenessProbe  *Probe         `yaml:"liveness_probe,omitempty" json:"liveness_probe,omitempty"`
	ReadinessProbe *Probe         `yaml:"readiness_probe,omitempty" json:"readiness_probe,omitempty"`
	StartupProbe   *Probe         `yaml:"startup_probe,omitempty" json:"startup_probe,omitempty"`
	StopPolicy     *StopPolicy    `yaml:"stop_policy,omitempty" json:"stop_policy,omitempty"`
	TermBarrier    string         `yaml:"term_barrier,omitempty" json:"term_barrier,omitempty"`
	DestroyPolicy  *Policy        `yaml:"destroy_policy,omitempty" json:"destroy_policy,omitempty"`
	NotifyActions  []Policy       `yaml:"notify_actions,omitempty" json:"notify_actions,omitempty"`
	TargetState    string         `yaml:"target_state,omitempty" json:"target_state,omitempty"`
	Log            *Log           `yaml:"log,omitempty" json:"log,omitempty"`
	// DependsOn maps a container's name to the condition it must meet before this
	// container starts (docs/reference.md "depends_on"). A mapping, so that reordering it changes
	// nothing; Dependencies lists it by name.
	DependsOn map[string]string `yaml:"depends_on,omitempty" json:"depends_on,omitempty"`
	// User, Group and Rlimits apply to every process of the container (identity.go).
	User    string            `yaml:"user,omitempty" json:"user,omitempty"`
	Group   string            `yaml:"group,omitempty" json:"group,omitempty"`
	Rlimits map[string]Rlimit `yaml:"rlimits,omitempty" json:"rlimits,omitempty"`
	// Limits are the container's cgroup limits; MemoryRestart restarts it through its
	// stop policy when its memory stays above it (docs/reference.md "Cgroups and limits", limits.go).
	Limits        Limits `yaml:"limits,omitempty" json:"limits,omitzero"`
	MemoryRestart Bytes  `yaml:"memory_restart,omitempty" json:"memory_restart,omitzero"`
	// Sockets are listening sockets tend binds and holds for the container's whole
	// life, passed to each of its processes (docs/reference.md "Restarts without downtime", sockets.go); Update says how
	// a restart replaces a process (docs/reference.md "Restarts without downtime").
	Sockets []Socket `yaml:"sockets,omitempty" json:"sockets,omitempty"`
	Update  string   `yaml:"update,omitempty" json:"update,omitempty"`

	// Schedule starts the container at each time it names (docs/reference.md
	// "Schedules", schedule.go); "" for none.
	Schedule string `yaml:"schedule,omitempty" json:"schedule,omitempty"`

	// AffectsReadiness false keeps the container out of the instance's ready
	// condition (a log shipper, a metrics sidecar); it keeps its own ready and alive
	// (docs/reference.md "Readiness that does not count").
	AffectsReadiness Opt[bool] `yaml:"affects_readiness,omitempty" json:"affects_readiness,omitzero"`

	ident *Identity // resolved by Load
}

// CountsForReadiness reports whether the container's ready condition is part of the
// instance's: affects_readiness after Load; a container built by hand (tests, no
// defaults applied) counts, as the default says. A scheduled container never counts:
// waiting for its time, running or after a failed run, it does not take the instance
// out of service (docs/reference.md "Schedules").
func (c *Container) CountsForReadiness() bool {
	if c.Schedule != "" {
		return false
	}
	return !c.AffectsReadiness.IsSet() || c.AffectsReadiness.Get()
}

// Values of Container.TermBarrier, Container.TargetState and RestartPolicy.Mode.
const (
	BarrierWait   = "WAIT"
	BarrierIgnore = "IGNORE"

	TargetActive  = "active"
	TargetRemoved = "removed"

	ModeAlways    = "always"
	ModeOnFailure = "on_failure"
	ModeNever     = "never"

	GiveUpStop     = "stop"
	GiveUpShutdown = "shutdown"

	SchemeHTTP  = "http"
	SchemeHTTPS = "https"
)

// RestartMode is a value of RestartPolicy.Mode and what it restarts: the runs that
// exited 0, those that did not (a run stopped at max_run_ms counts as failed).
// restart.Decide applies it; a mode that restarts after success never completes, so
// it is no job, runs no schedule and meets no depends_on condition succeeded or
// completed.
type RestartMode struct {
	Name         string
	AfterSuccess bool
	AfterFailure bool
}

// RestartModes is the one table of restart modes, in the order the docs and errors
// list them: validation, the schema and restart.Decide read it.
var RestartModes = []RestartMode{
	{Name: ModeAlways, AfterSuccess: true, AfterFailure: true},
	{Name: ModeOnFailure, AfterFailure: true},
	{Name: ModeNever},
}

// RestartModeOf is the mode named name; an unknown name (validation refuses it)
// restarts nothing.
func RestartModeOf(name string) RestartMode {
	for _, m := range RestartModes {
		if m.Name == name {
			return m
		}
	}
	return RestartMode{Name: name}
}

// RestartModeNames are the names of RestartModes.
func RestartModeNames() []string {
	names := make([]string, len(RestartModes))
	for i, m := range RestartModes {
		names[i] = m.Name
	}
	return names
}

// Completes reports whether a run of the policy can end for good: its mode does not
// restart after exit 0.
func (p *RestartPolicy) Completes() bool {
	return !RestartModeOf(p.Mode).AfterSuccess
}

// Conditions of depends_on (docs/reference.md "depends_on").
const (
	CondStarted   = "started"   // its process has started
	CondReady     = "ready"     // it is ready
	CondSucceeded = "succeeded" // it completed with exit 0
	CondCompleted = "completed" // it completed with any exit
)

// RestartPolicy is instancectl's jittered exponential restart (docs/reference.md "Running").
type RestartPolicy struct {
	MinPeriodMs   Opt[int64]   `yaml:"min_period_ms,omitempty" json:"min_period_ms,omitzero"`
	MaxPeriodMs   Opt[int64]   `yaml:"max_period_ms,omitempty" json:"max_period_ms,omitzero"`
	Backoff       Opt[float64] `yaml:"backoff,omitempty" json:"backoff,omitzero"`
	MaxJitterMs   Opt[int64]   `yaml:"max_jitter_ms,omitempty" json:"max_jitter_ms,omitzero"`
	StableAfterMs Opt[int64]   `yaml:"stable_after_ms,omitempty" json:"stable_after_ms,omitzero"`
	Mode          string       `yaml:"mode,omitempty" json:"mode,omitempty"`
	// MaxFailures is how many consecutive short runs end the restarts (0: never);
	// OnGiveUp says what happens then (docs/reference.md "Restart limits and deadlines").
	MaxFailures Opt[int] `yaml:"max_failures,omitempty" json:"max_failures,omitzero"`
	OnGiveUp    string   `yaml:"on_give_up,omitempty" json:"on_give_up,omitempty"`
}

// Handler is one action: exactly one kind is set (which kinds are allowed depends on
// where it is used: liveness probes take http_get/tcp_socket/exec, readiness and
// startup probes add notify and log_line, stop policies take http_get/exec/unix_signal,
// destroy policies, notify actions and verify take http_get/exec).
type Handler struct {
	HTTPGet    *HTTPGet    `yaml:"http_get,omitempty" json:"http_get,omitempty"`
	TCPSocket  *TCPSocket  `yaml:"tcp_socket,omitempty" json:"tcp_socket,omitempty"`
	Exec       *Exec       `yaml:"exec,omitempty" json:"exec,omitempty"`
	UnixSignal *UnixSignal `yaml:"unix_signal,omitempty" json:"unix_signal,omitempty"`
	Notify     *Notify     `yaml:"notify,omitempty" json:"notify,omitempty"`
	// LogLine is an RE2 expression: ready once a line of the process's output
	// matches it. LogLineRegexp is the compiled form.
	LogLine Opt[string] `yaml:"log_line,omitempty" json:"log_line,omitzero"`

	logLine *regexp.Regexp // LogLine compiled by validation
}

// LogLineRegexp is the compiled log_line expression; nil when the handler has none.
// Load compiles it while validating; for a handler built by hand it is compiled
// here (nil when it does not compile).
func (h Handler) LogLineRegexp() *regexp.Regexp {
	switch {
	case !h.LogLine.IsSet():
		return nil
	case h.logLine != nil && h.logLine.String() == h.LogLine.Get():
		return h.logLine
	}
	re, err := regexp.Compile(h.LogLine.Get())
	if err != nil {
		return nil
	}
	return re
}

// HTTPGet is a GET to Scheme://Host:Port/Path. Port is a string because it may hold
// a {VAR}; after Load it is a decimal number in 1..65535 (empty: instance.port).
// Scheme https does TLS without verifying the certificate (as kubelet).
type HTTPGet struct {
	Scheme         string       `yaml:"scheme,omitempty" json:"scheme,omitempty"`
	Port           string       `yaml:"port,omitempty" json:"port,omitempty"`
	Path           string       `yaml:"path,omitempty" json:"path,omitempty"`
	Host           string       `yaml:"host,omitempty" json:"host,omitempty"`
	Headers        []HTTPHeader `yaml:"headers,omitempty" json:"headers,omitempty"`
	ExpectedAnswer string       `yaml:"expected_answer,omitempty" json:"expected_answer,omitempty"`
	Any            bool         `yaml:"any,omitempty" json:"any,omitempty"`
}

// HTTPHeader is a header sent with every request of an http_get handler. After Load
// Name is an RFC 9110 token and Value (substituted) holds no CR, LF or NUL. A Host,
// User-Agent or Accept header replaces tend's own.
type HTTPHeader struct {
	Name  string `yaml:"name" json:"name"`
	Value string `yaml:"value" json:"value"`
}

// Notify is a readiness or startup probe by notification (docs/reference.md "Readiness by notification"): systemd's
// protocol on a NOTIFY_SOCKET of the container's own (FD unset), with a watchdog when
// WatchdogMs is set; or s6's, a newline written to file descriptor FD. The two are
// exclusive: s6's protocol has no watchdog.
type Notify struct {
	WatchdogMs Opt[int64] `yaml:"watchdog_ms,omitempty" json:"watchdog_ms,omitzero"`
	FD         Opt[int]   `yaml:"fd,omitempty" json:"fd,omitzero"`
}

// TCPSocket succeeds when connect succeeds; Host defaults to ::1.
type TCPSocket struct {
	Port string `yaml:"port,omitempty" json:"port,omitempty"`
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
}

// Exec succeeds when its command exits 0.
type Exec struct {
	Command Command `yaml:"command" json:"command"`
}

// UnixSignal sends Signal (e.g. "SIGINT" or "INT") to the root process.
type UnixSignal struct {
	Signal string `yaml:"signal" json:"signal"`
}

// Probe is a liveness, readiness or startup probe (docs/reference.md "Probes").
type Probe struct {
	Handler          `yaml:",inline" json:",inline"`
	TimeLimit        *TimeLimit `yaml:"time_limit,omitempty" json:"time_limit,omitempty"`
	FailureThreshold Opt[int]   `yaml:"failure_threshold,omitempty" json:"failure_threshold,omitzero"`
	SuccessThreshold Opt[int]   `yaml:"success_threshold,omitempty" json:"success_threshold,omitzero"`

	// Timing is the shorthand of TimeLimit (shorthand.go).
	Timing `yaml:",inline" json:",inline"`
}

// StopPolicy is the stop handler and the timings of the stop sequence (docs/reference.md "Stop sequence").
// It may name no handler at all.
type StopPolicy struct {
	Handler       `yaml:",inline" json:",inline"`
	MaxTries      Opt[int]   `yaml:"max_tries,omitempty" json:"max_tries,omitzero"`
	TimeLimit     *TimeLimit `yaml:"time_limit,omitempty" json:"time_limit,omitempty"`
	WaitAfterMs   Opt[int64] `yaml:"wait_after_ms,omitempty" json:"wait_after_ms,omitzero"`
	TermTimeoutMs Opt[int64] `yaml:"term_timeout_ms,omitempty" json:"term_timeout_ms,omitzero"`

	// Timing is the shorthand of TimeLimit (shorthand.go).
	Timing `yaml:",inline" json:",inline"`
}

// Policy is a handler retried up to MaxTries with TimeLimit between tries: destroy
// policies, notify actions and dynamic resource verification.
type Policy struct {
	Handler   `yaml:",inline" json:",inline"`
	MaxTries  Opt[int]   `yaml:"max_tries,omitempty" json:"max_tries,omitzero"`
	TimeLimit *TimeLimit `yaml:"time_limit,omitempty" json:"time_limit,omitempty"`

	// Timing is the shorthand of TimeLimit (shorthand.go).
	Timing `yaml:",inline" json:",inline"`
}

// Log is an optional log file with size rotation, and the lines kept in memory for
// GET /v1/logs; stdout prefixing always happens.
type Log struct {
	File      string   `yaml:"file,omitempty" json:"file,omitempty"`
	KeepLines Opt[int] `yaml:"keep_lines,omitempty" json:"keep_lines,omitzero"`
	MaxSizeMb Opt[int] `yaml:"max_size_mb,omitempty" json:"max_size_mb,omitzero"`
	MaxFiles  Opt[int] `yaml:"max_files,omitempty" json:"max_files,omitzero"`
}

// Resource is a static ISS resource (docs/reference.md "Resources").
type Resource struct {
	Name        string   `yaml:"name" json:"name"`
	URLs        []string `yaml:"urls" json:"urls"`
	Checksum    string   `yaml:"checksum,omitempty" json:"checksum,omitempty"`
	CheckPeriod string   `yaml:"check_period,omitempty" json:"check_period,omitempty"`
	Extract     bool     `yaml:"extract,omitempty" json:"extract,omitempty"`
	Executable  bool     `yaml:"executable,omitempty" json:"executable,omitempty"` // see executable.go
	// Cached keeps the content in <instance.dir>/.tend/cache once the spec no longer
	// names it, for a later spec that does (docs/reference.md "Removed resources and
	// the cache"); without it a removed resource is deleted.
	Cached bool `yaml:"cached,omitempty" json:"cached,omitempty"`
	// Size is checked against the free space of instance.dir's filesystem before any
	// download (docs/reference.md "Disk space"); unset: no check.
	Size Bytes `yaml:"size,omitempty" json:"size,omitzero"`
	// UUID names the content: resources with the same uuid are the same content,
	// fetched once (docs/reference.md "Same checksum, one download").
	UUID string `yaml:"uuid,omitempty" json:"uuid,omitempty"`
}

// DynamicResource is a dynamic resource (ISS's DynamicResource) with revisions kept in StorageDir (docs/reference.md "Resources").
type DynamicResource struct {
	Name                 string   `yaml:"name" json:"name"`
	Revision             int64    `yaml:"revision" json:"revision"`
	URLs                 []string `yaml:"urls" json:"urls"`
	Checksum             string   `yaml:"checksum,omitempty" json:"checksum,omitempty"`
	StorageDir           string   `yaml:"storage_dir" json:"storage_dir"`
	Destination          string   `yaml:"destination" json:"destination"`
	CachedRevisionsCount Opt[int] `yaml:"cached_revisions_count,omitempty" json:"cached_revisions_count,omitzero"`
	Extract              bool     `yaml:"extract,omitempty" json:"extract,omitempty"`
	Verify               *Policy  `yaml:"verify,omitempty" json:"verify,omitempty"`
}
