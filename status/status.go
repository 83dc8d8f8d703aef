// Package status is the vocabulary of the status document (docs/reference.md "The status document"): conditions,
// exits, timestamps and the document itself, shared by the supervisor that serves it,
// the containers that fill it and the CLI that prints it.
package status

import (
	"encoding/json"
	"time"
)

// Time marshals as RFC 3339 with milliseconds in UTC.
type Time struct{ time.Time }

// Layout is the timestamp layout of every time in the document.
const Layout = "2006-01-02T15:04:05.000Z07:00"

// At wraps t; the zero time.Time stays zero.
func At(t time.Time) Time { return Time{t} }

// Ptr returns a pointer to At(t), or nil for the zero time (a JSON null).
func Ptr(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte(`""`), nil
	}
	// The layout writes nothing JSON escapes: quoted as it is, without the string
	// encoder (a status of 100 containers has 500 times; tend top reads it each second).
	b := make([]byte, 0, len(Layout)+8)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, Layout)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		t.Time = time.Time{}
		return nil
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	t.Time = parsed
	return err
}

// Condition is a Kubernetes-style condition: "True" or "False" with why and since when.
type Condition struct {
	Status             string `json:"status"`
	Reason             Reason `json:"reason"`
	Message            string `json:"message"`
	LastTransitionTime Time   `json:"last_transition_time"`
}

// NewCondition returns a condition that became ok at now.
func NewCondition(ok bool, reason Reason, message string, now time.Time) Condition {
	return Condition{Status: boolString(ok), Reason: reason, Message: message, LastTransitionTime: At(now)}
}

// True reports whether the condition holds.
func (c Condition) True() bool { return c.Status == "True" }

// Set moves the condition to ok with reason and message; the transition time changes
// only when the status itself changes. It reports whether anything changed.
func (c *Condition) Set(ok bool, reason Reason, message string, now time.Time) bool {
	s := boolString(ok)
	if c.Status == s && c.Reason == reason && c.Message == message {
		return false
	}
	if c.Status != s {
		c.LastTransitionTime = At(now)
	}
	c.Status, c.Reason, c.Message = s, reason, message
	return true
}

// Reason is why a condition is what it is: one word in CamelCase, as Kubernetes
// writes them, that clients compare (the supervisor tells a container that gave up
// from one whose dependency failed by it).
type Reason string

// Reasons of a container's alive and ready conditions (docs/reference.md "The status document").
const (
	ReasonNotStarted           Reason = "NotStarted"           // it has not started yet
	ReasonWaiting              Reason = "Waiting"              // for its depends_on conditions
	ReasonScheduled            Reason = "Scheduled"            // waits for its schedule's next time
	ReasonRunning              Reason = "Running"              // alive; ready without a readiness probe
	ReasonStartupProbe         Reason = "StartupProbe"         // the startup probe has not passed yet
	ReasonNotProbed            Reason = "NotProbed"            // the readiness probe has not passed yet
	ReasonNotReady             Reason = "NotReady"             // no readiness signal yet
	ReasonReady                Reason = "Ready"                // the readiness probe passed
	ReasonReadinessProbeFailed Reason = "ReadinessProbeFailed" // the readiness probe failed
	ReasonLivenessProbeFailed  Reason = "LivenessProbeFailed"  // the liveness probe failed
	ReasonKilled               Reason = "Killed"               // tend killed it (liveness, startup, watchdog)
	ReasonExited               Reason = "Exited"               // the process exited
	ReasonStopping             Reason = "Stopping"             // a stop runs (of the instance too)
	ReasonStopped              Reason = "Stopped"              // a stop ended
	ReasonStoppedByRequest     Reason = "StoppedByRequest"     // tend stop
	ReasonRemoved              Reason = "Removed"              // target_state removed
	ReasonRestartLimit         Reason = "RestartLimit"         // restart_policy.max_failures gave up
	ReasonDependencyFailed     Reason = "DependencyFailed"     // a depends_on condition can no longer hold
)

// Reasons of a container's events that its conditions do not use (docs/reference.md
// "Events"); an event of a kill, a stop by request, a restart limit or a failed
// dependency takes the condition's reason above.
const (
	ReasonStarted            Reason = "Started"            // a process started (pid)
	ReasonStartedByRequest   Reason = "StartedByRequest"   // tend start
	ReasonRestartedByRequest Reason = "RestartedByRequest" // tend restart
	ReasonProbeFailed        Reason = "ProbeFailed"        // a check failed: which probe, what it saw
	ReasonProbeRecovered     Reason = "ProbeRecovered"     // a check passed after failures
	ReasonBackOff            Reason = "BackOff"            // the next start waits (next start in N s)
	ReasonDeadlineExceeded   Reason = "DeadlineExceeded"   // max_run_ms passed: stopping
	ReasonScheduleSkipped    Reason = "ScheduleSkipped"    // a scheduled time came while a run was going
	ReasonUpdating           Reason = "Updating"           // a reload rolls out a changed spec start first
	// ReasonOOMKilled is the reason of an exit the kernel's OOM killer caused; it is
	// recorded once the exit handling can tell (the cgroup's memory.events).
	ReasonOOMKilled Reason = "OOMKilled"
	// ReasonMemoryRestart: memory_bytes stayed above memory_restart: restarting.
	ReasonMemoryRestart Reason = "MemoryRestart"
)

// EventType is how much an event matters: Normal, or Warning for what went wrong.
type EventType string

// The event types, as Kubernetes names them.
const (
	Normal  EventType = "Normal"
	Warning EventType = "Warning"
)

// Event is one thing that happened to a container (docs/reference.md "Events").
type Event struct {
	Time    Time      `json:"time"`
	Type    EventType `json:"type"`
	Reason  Reason    `json:"reason"`
	Message string    `json:"message"`
}

// ProbeResult is one check of a probe.
type ProbeResult struct {
	Time       Time   `json:"time"`
	Result     string `json:"result"` // success | failure
	DurationMs int64  `json:"duration_ms"`
	Message    string `json:"message"` // what the check saw; "" on success
}

// ProbeResults are the last checks of one probe, oldest first.
type ProbeResults struct {
	Last []ProbeResult `json:"last"`
}

// ContainerDetail is one container as GET /v1/containers/NAME answers: its status
// entry, its events (oldest first) and the last checks of each polled probe it has,
// by kind (liveness, readiness, startup).
type ContainerDetail struct {
	Container
	Events []Event                 `json:"events"`
	Probes map[string]ProbeResults `json:"probes"`
}

// Reasons of the instance's installed and ready conditions (docs/reference.md "The status document").
const (
	ReasonPreparing            Reason = "Preparing"
	ReasonPrepared             Reason = "Prepared"
	ReasonPrepareFailed        Reason = "PrepareFailed"
	ReasonInitContainerFailing Reason = "InitContainerFailing"
	ReasonResourcesFailing     Reason = "ResourcesFailing"
	ReasonFilesFailing         Reason = "FilesFailing" // a file of files: cannot be read or written
	ReasonNotInstalled         Reason = "NotInstalled"
	ReasonContainersReady      Reason = "ContainersReady"
	ReasonContainersNotReady   Reason = "ContainersNotReady"
	// ReasonInsufficientDisk: a resource's size does not fit the free space of its
	// filesystem; nothing was fetched (also a resource's reason, as its first word).
	ReasonInsufficientDisk Reason = "InsufficientDisk"
)

func boolString(ok bool) string {
	if ok {
		return "True"
	}
	return "False"
}

// Exit is how a process last ended.
type Exit struct {
	Code   int        `json:"code"`   // exit code, 128+N for a signal N, 127/126 when it could not start
	Signal string     `json:"signal"` // "SIGKILL", or "" for a normal exit
	At     Time       `json:"at"`
	Reason ExitReason `json:"reason"`
}

// ExitReason says in words how a process ended: "exit code N", "killed by SIGNAL",
// "timed out after D", "cannot start: ERROR", or why tend ended it ("liveness probe
// failed: DETAIL", the constants below). docs/reference.md "The status document".
type ExitReason string

// The exit reasons of fixed words.
const (
	ExitOOMKilled        ExitReason = "OOMKilled"                       // the kernel's OOM killer killed a process of it
	ExitDeadlineExceeded ExitReason = "deadline exceeded"               // max_run_ms passed
	ExitMemoryRestart    ExitReason = "memory above memory_restart"     // memory_restart restarted it
	ExitStopBeforeReady  ExitReason = "a stop came before it was ready" // a start_first run, stopped before it was ready
)

// InitContainer is the status of one init container.
type InitContainer struct {
	Name     string `json:"name"`
	State    State  `json:"state"` // waiting | running | backoff | succeeded
	Attempts int    `json:"attempts"`
	LastExit *Exit  `json:"last_exit"`
}

// Container is the status of one container.
type Container struct {
	Name        string `json:"name"`
	State       State  `json:"state"`
	TargetState string `json:"target_state"`
	Pid         *int   `json:"pid"`
	// OldPid is the process an update: start_first replaces, while it runs beside
	// the new one (Pid); null otherwise.
	OldPid      *int      `json:"old_pid"`
	StartedAt   *Time     `json:"started_at"`
	Restarts    int       `json:"restarts"`
	NextStartAt *Time     `json:"next_start_at"`
	Alive       Condition `json:"alive"`
	Ready       Condition `json:"ready"`
	// AffectsReadiness is false for a container whose ready condition the instance's
	// leaves out (affects_readiness: false in its spec).
	AffectsReadiness bool  `json:"affects_readiness"`
	LastExit         *Exit `json:"last_exit"`
	// StoppedByRequest is true after `tend stop` until `tend start` or `tend
	// restart`: reloads keep such a container stopped.
	StoppedByRequest bool `json:"stopped_by_request"`
	// WaitingFor names the depends_on conditions a waiting container waits for
	// ("db: ready"); empty otherwise, never null.
	WaitingFor []string `json:"waiting_for"`
	// StatusText is the last STATUS= the process sent on its notify socket.
	StatusText string `json:"status_text"`
	// LogError is why writing log.file fails, "" while it works (or without one).
	LogError string `json:"log_error"`
	// StopStep tells where a stopping container is: handler, wait_after, barrier,
	// term, kill or destroy. Empty outside stopping.
	StopStep string `json:"stop_step,omitempty"`
	// Cgroup is the container's cgroup as /proc/PID/cgroup shows it
	// (<start>/containers/NAME), "" with cgroups off (docs/reference.md "Cgroups and limits").
	Cgroup string `json:"cgroup"`
	// LimitsApplied is false when a limit of the container could not be written (a
	// warning at start says which and why); true otherwise, also without limits.
	LimitsApplied bool `json:"limits_applied"`
	// LimitsReason is why not, one "LIMIT: reason" per limit not applied ("; "
	// between); "" while limits_applied is true (docs/reference.md "Cgroups and limits").
	LimitsReason string `json:"limits_reason,omitempty"`
	// Usage is what the container uses (docs/reference.md "Cgroups and limits"), from its cgroup or /proc.
	Usage Usage `json:"usage"`
	// Limits are the container's own limits as its spec sets them, so that usage can
	// be shown against them (tend top's 120Mi/512Mi).
	Limits Limits `json:"limits"`
}

// Limits are a container's cgroup limits as its spec sets them; 0 is none. Whether
// they could be applied is the container's limits_applied.
type Limits struct {
	CPU         float64 `json:"cpu"` // cores
	MemoryBytes int64   `json:"memory_bytes"`
	Pids        int64   `json:"pids"`
}

// Process is tend's own process as GET /v1/status shows it (tend top's header).
type Process struct {
	Pid         int     `json:"pid"`
	StartedAt   Time    `json:"started_at"`
	CPUSeconds  float64 `json:"cpu_seconds"`  // user and system, since it started
	MemoryBytes int64   `json:"memory_bytes"` // resident set
}

// State is the state of a container or an init container.
type State string

// Container states (docs/reference.md "Status API").
const (
	Waiting      State = "waiting"
	Initializing State = "initializing"
	Running      State = "running"
	Backoff      State = "backoff"
	Stopping     State = "stopping"
	Stopped      State = "stopped"
	Completed    State = "completed"
	Failed       State = "failed"    // its restart limit gave up
	Succeeded    State = "succeeded" // an init container that exited 0
)

// InstanceState is the state of the instance as a whole.
type InstanceState string

// Instance states (docs/reference.md "The status document").
const (
	InstancePreparing InstanceState = "preparing"
	InstanceRunning   InstanceState = "running"
	InstanceStopping  InstanceState = "stopping"
	InstanceStopped   InstanceState = "stopped"
)

// ResourceState is the state of a static or dynamic resource (docs/reference.md
// "Resources").
type ResourceState string

// Resource states.
const (
	ResourceFetching   ResourceState = "fetching"    // fetched, verified or switched to
	ResourceReady      ResourceState = "ready"       // in place and verified
	ResourceFailed     ResourceState = "failed"      // the reason says why
	ResourceRolledBack ResourceState = "rolled_back" // a dynamic resource's new revision failed: the earlier one is back
)

// Resource is the status of a static resource (docs/reference.md "Resources").
type Resource struct {
	Name       string        `json:"name"`
	State      ResourceState `json:"state"`
	ChecksumOK bool          `json:"checksum_ok"`
	Reason     string        `json:"reason"`
	BytesDone  int64         `json:"bytes_done"`
	BytesTotal *int64        `json:"bytes_total"`
}

// DynamicResource is the status of a dynamic resource (docs/reference.md "Resources").
type DynamicResource struct {
	Name           string        `json:"name"`
	Revision       int64         `json:"revision"`
	State          ResourceState `json:"state"`
	ActiveRevision int64         `json:"active_revision"`
	Reason         string        `json:"reason"`
}

// Document is the whole status document served at GET /v1/status.
type Document struct {
	Instance         string            `json:"instance"`
	Revision         string            `json:"revision"`
	State            InstanceState     `json:"state"`
	Installed        Condition         `json:"installed"`
	Ready            Condition         `json:"ready"`
	InitContainers   []InitContainer   `json:"init_containers"`
	Containers       []Container       `json:"containers"`
	Resources        []Resource        `json:"resources,omitempty"`
	DynamicResources []DynamicResource `json:"dynamic_resources,omitempty"`
	ReloadError      string            `json:"reload_error"`
	// Revisions are the instance's revisions, newest first (docs/reference.md
	// "Updates and rollback"); SpecFileRevision is the spec file's when it is not the
	// active one.
	Revisions        []Revision `json:"revisions"`
	SpecFileRevision string     `json:"spec_file_revision,omitempty"`
	// ConsoleDroppedLines counts the lines of containers and of tend's own log that
	// tend's stdout and stderr did not take in time (nobody reading them) and that
	// were dropped instead of stalling supervision. Log files and `tend logs` have them.
	ConsoleDroppedLines uint64 `json:"console_dropped_lines"`
	LastHeartbeatTime   *Time  `json:"last_heartbeat_time,omitempty"`
	// Cgroups says how containers are placed (docs/reference.md "Cgroups and limits").
	Cgroups Cgroups `json:"cgroups"`
	// Tend is tend's own process: only in the answer of GET /v1/status, read as it
	// is asked for (not in reports, which would change with every one).
	Tend *Process `json:"tend,omitempty"`
}

// Cgroups is the instance's cgroup mode, and why off.
type Cgroups struct {
	Mode   CgroupMode `json:"mode"`
	Reason string     `json:"reason"`
}

// CgroupMode is how tend places containers: in cgroup v2, in cgroup v1, or not at
// all (docs/reference.md "Cgroups and limits").
type CgroupMode string

// The cgroup modes (cgroup.Mode's, as status shows them).
const (
	CgroupsV2  CgroupMode = "v2"
	CgroupsV1  CgroupMode = "v1"
	CgroupsOff CgroupMode = "off"
)

// Revision is one revision of the instance: a whole spec, installed in its store and
// possibly active (docs/reference.md "Updates and rollback").
type Revision struct {
	ID          string    `json:"id"`
	Active      bool      `json:"active"`
	Source      string    `json:"source"` // "file" or "api"
	CreatedAt   Time      `json:"created_at"`
	ActivatedAt *Time     `json:"activated_at"`
	Installed   Condition `json:"installed"`
	Ready       Condition `json:"ready"`
	DiskBytes   int64     `json:"disk_bytes"`
}

// Reasons of a revision's installed and ready conditions.
const (
	ReasonInstalling    Reason = "Installing"    // its resources and files are being put in its store
	ReasonInstallFailed Reason = "InstallFailed" // the message names what and why
	ReasonInstalled     Reason = "Installed"     // ready to be activated
	ReasonInactive      Reason = "Inactive"      // installed, not the active one
	ReasonRolledBack    Reason = "RolledBack"    // it was not ready in time and was rolled back
	ReasonActivating    Reason = "Activating"    // active, not ready since its activation began
)

// ApplyPlan is what activating a revision would do (tend apply --dry-run, PUT
// /v1/revisions/ID?dry_run=1): containers started, restarted (and the field that
// changed), stopped and kept; whether the instance is re-prepared (and because of
// what); the static resources to fetch.
type ApplyPlan struct {
	Revision  string          `json:"revision"`
	Start     []string        `json:"start"`
	Restart   []RestartReason `json:"restart"`
	Stop      []string        `json:"stop"`
	Keep      []string        `json:"keep"`
	Reprepare string          `json:"reprepare"`
	Fetch     []string        `json:"fetch"`
}

// RestartReason is a container a revision restarts and the field of its spec (or
// what it inherits) that changed.
type RestartReason struct {
	Name  string `json:"name"`
	Field string `json:"field"`
}
