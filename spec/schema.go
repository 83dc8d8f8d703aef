package spec

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// SchemaID names the schema; editors use the $schema line of a spec, not this.
const SchemaID = "https://github.com/tend-sh/tend/docs/tend.schema.json"

// Schema is a JSON Schema (draft 2020-12) of the spec document, made by reflection
// from the types Load decodes into, so that it has every field the decoder accepts
// and no other (unknown fields are errors in both). It describes shapes, types,
// enums and defaults; the rest of validation (names, ports, commands, cycles) is
// tend validate's. A string field also takes numbers and booleans, as the decoder
// does (port: 8080 is "8080").
func Schema() []byte {
	g := schemaGen{defs: map[string]any{}}
	root := g.object(reflect.TypeFor[Spec]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "tend instance spec"
	root["$defs"] = g.defs
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		panic(err) // only maps, slices, strings and numbers: cannot fail
	}
	return append(b, '\n')
}

type schemaGen struct {
	defs map[string]any
}

// of is the schema of a value of type t in the field owner.name.
func (g *schemaGen) of(t reflect.Type, owner, name string) map[string]any {
	key := owner + "." + name
	if elem, ok := optElem(t); ok && !isQuantity(t) {
		t = elem // an Opt is described as its element
	}
	var s map[string]any
	switch {
	case isQuantity(t):
		s = map[string]any{"oneOf": quantitySchemas()[t]}
	case t == commandType:
		s = map[string]any{"oneOf": []any{
			map[string]any{"type": "string", "description": "split like a POSIX shell word list ($VAR expanded), never run by a shell"},
			map[string]any{"type": "array", "items": scalarSchema(), "minItems": 1, "description": "used as is"},
		}}
	case t.Kind() == reflect.Pointer:
		return g.of(t.Elem(), owner, name)
	case t.Kind() == reflect.Struct:
		if _, ok := g.defs[t.Name()]; !ok {
			g.defs[t.Name()] = nil // a recursive type refers to itself
			g.defs[t.Name()] = g.object(t)
		}
		s = map[string]any{"$ref": "#/$defs/" + t.Name()}
	case t.Kind() == reflect.Slice:
		s = map[string]any{"type": "array", "items": g.of(t.Elem(), owner, name+"[]")}
	case t.Kind() == reflect.Map:
		s = map[string]any{"type": "object", "additionalProperties": g.of(t.Elem(), owner, name+"{}")}
	case t.Kind() == reflect.String:
		s = scalarSchema()
	case t.Kind() == reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		s = map[string]any{"type": "integer"}
	case t.Kind() == reflect.Float64:
		s = map[string]any{"type": "number"}
	default:
		panic("spec.Schema: no schema for " + t.String())
	}
	if pattern, ok := schemaPatterns()[key]; ok {
		s = map[string]any{"type": "string", "pattern": pattern}
	}
	if enum, ok := schemaEnums()[key]; ok {
		s = map[string]any{"enum": enum}
	}
	if d, ok := schemaDefaults()[key]; ok {
		s["default"] = d
	}
	if d, ok := schemaDescriptions()[key]; ok {
		s["description"] = d
	}
	return s
}

// object is the schema of a struct: its yaml fields (inline ones merged), none other.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	timing := false
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if strings.Contains(opts, "inline") {
				timing = timing || f.Type == reflect.TypeFor[Timing]()
				add(f.Type)
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			props[name] = g.of(f.Type, t.Name(), name)
			if !strings.Contains(opts, "omitempty") && !schemaOptional[t.Name()+"."+name] {
				required = append(required, name)
			}
		}
	}
	add(t)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	if d, ok := schemaDescriptions()[t.Name()]; ok {
		s["description"] = d
	}
	if timing { // the shorthand excludes time_limit, as validation says
		notWithTimeLimit := map[string]any{"not": map[string]any{"required": []any{"time_limit"}}}
		s["dependentSchemas"] = map[string]any{"period": notWithTimeLimit, "initial_delay": notWithTimeLimit, "timeout": notWithTimeLimit}
	}
	return s
}

// scalarSchema is a string field: any scalar, as the decoder takes it.
func scalarSchema() map[string]any {
	return map[string]any{"type": []any{"string", "number", "boolean"}}
}

// schemaOptional are fields without omitempty that a spec may leave out.
var schemaOptional = map[string]bool{"Spec.instance": true, "Spec.containers": true}

// durationPattern is a duration of time.ParseDuration that is not negative (a
// sub-millisecond remainder is left to validation).
const durationPattern = `^\+?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$`

// The tables below are built on first use (sync.OnceValue), not as package maps:
// only the schema needs them, and as package variables their ~180 entries were made
// in the package's init, before every `tend run` could start its first container.

// schemaPatterns are the string fields with a fixed form.
var schemaPatterns = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"Timing.period":        durationPattern,
		"Timing.initial_delay": durationPattern,
		"Timing.timeout":       durationPattern,
	}
})

// quantitySchemas are the forms of a limit: a number (an integer for a count) or a
// string the parser of quantity.go takes (its "above 0" for strings, and "finer than
// a millicore", are left to validation).
var quantitySchemas = sync.OnceValue(func() map[reflect.Type][]any {
	return map[reflect.Type][]any{
		reflect.TypeFor[Cores](): {
			map[string]any{"type": "number", "exclusiveMinimum": 0, "description": "cores"},
			map[string]any{"type": "string", "pattern": `^\s*(\d+(\.\d*)?|\.\d+)[mc]?\s*$`, "description": "cores, millicores (1500m) or porto's cores (1.5c)"},
		},
		reflect.TypeFor[Bytes](): {
			map[string]any{"type": "number", "exclusiveMinimum": 0, "description": "bytes"},
			map[string]any{"type": "string", "pattern": `^\s*(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|K|M|G|T)?\s*$`, "description": "bytes, with Ki Mi Gi Ti (1024) or K M G T (1000)"},
		},
		reflect.TypeFor[Count](): {
			map[string]any{"type": "integer", "minimum": 1},
			map[string]any{"type": "string", "pattern": `^\s*\d+\s*$`},
		},
	}
})

// anys is ss as a JSON array.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// schemaEnums are the fields with a fixed set of values.
var schemaEnums = sync.OnceValue(func() map[string][]any {
	return map[string][]any{
		"Container.term_barrier":   {BarrierWait, BarrierIgnore},
		"Container.target_state":   {TargetActive, TargetRemoved},
		"Container.depends_on{}":   {CondStarted, CondReady, CondSucceeded, CondCompleted},
		"RestartPolicy.mode":       anys(RestartModeNames()),
		"RestartPolicy.on_give_up": {GiveUpStop, GiveUpShutdown},
		"HTTPGet.scheme":           {SchemeHTTP, SchemeHTTPS},
		"Instance.cgroups":         {CgroupsAuto, CgroupsRequired, CgroupsOff},
		"Container.update":         {UpdateStopFirst, UpdateStartFirst},
		"Instance.activate":        {ActivateAuto, ActivateManual},
		"InitContainer.at":         {AtActivate, AtInstall},
	}
})

// schemaDefaults are the defaults of applyDefaults that do not depend on where the
// type is used (time_limit's do: they are in its descriptions). A test checks both
// against what applyDefaults writes (schema_defaults_test.go).
var schemaDefaults = sync.OnceValue(func() map[string]any {
	return map[string]any{
		"Instance.init_timeout_ms":               0,
		"Instance.cgroups":                       CgroupsAuto,
		"Instance.keep_revisions":                DefaultKeepRevisions,
		"Instance.activate":                      ActivateAuto,
		"Instance.rollback_after":                DefaultRollbackAfter,
		"InitContainer.at":                       AtActivate,
		"RestartPolicy.min_period_ms":            DefaultRestartMinPeriodMs,
		"RestartPolicy.max_period_ms":            DefaultRestartMaxPeriodMs,
		"RestartPolicy.backoff":                  DefaultRestartBackoff,
		"RestartPolicy.max_jitter_ms":            DefaultRestartMaxJitterMs,
		"RestartPolicy.stable_after_ms":          DefaultRestartStableAfterMs,
		"RestartPolicy.mode":                     ModeAlways,
		"RestartPolicy.max_failures":             DefaultMaxFailures,
		"RestartPolicy.on_give_up":               GiveUpStop,
		"Container.max_run_ms":                   DefaultMaxRunMs,
		"Container.affects_readiness":            DefaultAffectsReadiness,
		"Container.term_barrier":                 BarrierIgnore,
		"Container.target_state":                 TargetActive,
		"Container.update":                       UpdateStopFirst,
		"StopPolicy.term_timeout_ms":             DefaultTermTimeoutMs,
		"StopPolicy.wait_after_ms":               DefaultWaitAfterMs,
		"StopPolicy.max_tries":                   DefaultMaxTries,
		"Policy.max_tries":                       DefaultMaxTries,
		"Probe.failure_threshold":                DefaultThreshold,
		"Probe.success_threshold":                DefaultThreshold,
		"HTTPGet.host":                           DefaultHTTPHost,
		"HTTPGet.path":                           DefaultHTTPPath,
		"HTTPGet.scheme":                         SchemeHTTP,
		"TCPSocket.host":                         DefaultTCPHost,
		"Log.max_size_mb":                        DefaultLogMaxSizeMb,
		"Log.max_files":                          DefaultLogMaxFiles,
		"Log.keep_lines":                         DefaultKeepLines,
		"Resource.checksum":                      DefaultChecksum,
		"Resource.check_period":                  DefaultCheckPeriod,
		"DynamicResource.checksum":               DefaultChecksum,
		"DynamicResource.cached_revisions_count": DefaultCachedRevisions,
		"File.mode":                              DefaultFileMode,
	}
})

// schemaDescriptions say what a type or field is (docs/reference.md "The spec" has more).
var schemaDescriptions = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"Spec.instance":          "the instance-wide section",
		"Spec.env":               "environment of every init container and container (after env_files)",
		"Spec.env_files":         "files of KEY=VALUE lines (# comments; ${VAR} of earlier keys expands), relative to instance.dir",
		"Spec.resources":         "static resources, fetched and verified before the init containers",
		"Spec.dynamic_resources": "resources with revisions kept in storage_dir, switched by a reload",
		"Spec.files":             "files tend writes into the instance before the init containers",
		"Spec.init_containers":   "run once, in order, each until it exits 0, before any container",
		"Spec.containers":        "the supervised processes",

		"Instance.name":            "BSCONFIG_INAME; default: the hostname",
		"Instance.dir":             "BSCONFIG_IDIR, the base of relative paths; default: the spec file's directory",
		"Instance.port":            "BSCONFIG_IPORT (and BSCONFIG_IPORT_PLUS_N)",
		"Instance.vars":            "more {NAME} substitution variables (also exported to every process)",
		"Instance.init_timeout_ms": "budget for resources and init containers together; 0: none",
		"Instance.cgroups":         "auto: a cgroup per container where tend can create them; required: exit 1 at start where it cannot; off: none",
		"Instance.limits":          "cgroup limits of all containers and init containers together",
		"Instance.revision":        "this spec's revision id ([A-Za-z0-9._-], at most 64); default: 12 hex digits of a digest of the spec, the --var values and the files it reads",
		"Instance.keep_revisions":  "inactive installed revisions kept for rollback; 0 keeps none",
		"Instance.activate":        "auto: a new revision is activated once installed; manual: it waits for tend activate ID",
		"Instance.rollback_after":  "a newly activated revision not ready this long (Go duration, 120s) is rolled back to the last stable one; 0s: never",
		"Instance.cache_max_bytes": "bytes (as limits.memory): the bound of .tend/cache, least recently used first out; default: none",

		"Limits":        "cgroup limits; each one absent is no limit",
		"Limits.cpu":    "cores: a number, \"1500m\" or \"1.5c\"",
		"Limits.memory": "bytes: a number, or with Ki Mi Gi Ti (1024) or K M G T (1000); no swap on top",
		"Limits.pids":   "processes and threads at once",

		"EnvVar.name":       "the variable's name",
		"EnvVar.value":      "a literal value ({NAME} substituted)",
		"EnvVar.value_from": "a secret: never logged or rendered",
		"ValueFrom.file":    "the file the secret value is read from",

		"InitContainer.name":        "a name unique among containers and init containers",
		"InitContainer.command":     "the command ({NAME} substituted)",
		"InitContainer.working_dir": "relative to instance.dir",
		"InitContainer.at":          "activate: it prepares the live instance when the revision is activated; install: it runs when the revision is installed, in its store ({REVISION_DIR}), while the active revision keeps serving",
		"InitContainer.time_limit":  "retry timing; defaults: initial delay 0, periods 1000..60000 ms, no execution limit",
		"InitCommand.command":       "run before the container's first start and after every change of its spec",
		"InitCommand.time_limit":    "retry timing; defaults: initial delay 0, periods 1000..60000 ms, no execution limit",

		"Container.name":              "a name unique among containers and init containers",
		"Container.command":           "the command ({NAME} substituted)",
		"Container.working_dir":       "relative to instance.dir",
		"Container.env":               "the container's own environment (later wins)",
		"Container.init":              "per-container init commands, in order, each until it exits 0",
		"Container.restart_policy":    "when and how fast the process is restarted",
		"Container.max_run_ms":        "a run longer than this is stopped (through the stop sequence) and counts as a failure; 0: none",
		"Container.schedule":          "start at each of these times: five cron fields, @hourly, @daily, @every 90s, CRON_TZ=Zone prefix; restart mode never or on_failure",
		"Container.liveness_probe":    "failure_threshold consecutive failures SIGKILL the process group",
		"Container.readiness_probe":   "says when the container is ready",
		"Container.startup_probe":     "runs first; liveness and readiness begin once it succeeds",
		"Container.stop_policy":       "the stop handler and the timings of the stop sequence",
		"Container.term_barrier":      "WAIT: get SIGTERM only after every IGNORE container of the same stop has got its own",
		"Container.destroy_policy":    "run after the final stop (shutdown, removal)",
		"Container.notify_actions":    "run when a dynamic resource changed",
		"Container.target_state":      "removed: stopped and kept stopped",
		"Container.log":               "a log file with size rotation (lines carry the time and the stream)",
		"Container.depends_on":        "containers (by name) and the condition each must meet before this one starts",
		"Container.limits":            "the container's cgroup limits",
		"Container.memory_restart":    "bytes (as limits.memory): restart the container through its stop policy after 3 samples, 1 s apart, above it",
		"Container.sockets":           "listening sockets tend binds before the first start and holds; every process gets them as fds 3, 4, ... (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES)",
		"Container.affects_readiness": "false: the container's ready condition is left out of the instance's (a log shipper, a metrics sidecar); it keeps its own",
		"Container.update":            "how a restart or a reload replaces the process: stop_first, or start_first (the new one starts, the old one stops once it is ready)",
		"Socket.listen":               "HOST:PORT with an IP address (127.0.0.1:8080, [::1]:8080) or unix:PATH (relative to instance.dir, mode 0660)",
		"Socket.name":                 "its LISTEN_FDNAMES entry; default: the container's name",

		"RestartPolicy.min_period_ms":   "the wait after the first short run",
		"RestartPolicy.max_period_ms":   "the longest wait",
		"RestartPolicy.backoff":         "the factor of the wait per consecutive short run",
		"RestartPolicy.max_jitter_ms":   "a uniform random addition to the wait",
		"RestartPolicy.stable_after_ms": "a run at least this long restarts at once and resets the failures",
		"RestartPolicy.mode":            "always, on_failure (exit code not 0) or never",
		"RestartPolicy.max_failures":    "consecutive short runs that end the restarts; 0: never",
		"RestartPolicy.on_give_up":      "what happens after max_failures: stop the container, or shut the instance down",

		"TimeLimit":                         "pod_agent's TTimeLimit: period = min(max_restart_period_ms, min_restart_period_ms + restart_period_scale_ms * restart_period_back_off^step), from the start of one run to the start of the next",
		"TimeLimit.initial_delay_ms":        "before the first run; default 5000 for probes, 0 elsewhere",
		"TimeLimit.min_restart_period_ms":   "default 5000 for probes, 1000 elsewhere",
		"TimeLimit.max_restart_period_ms":   "default 60000",
		"TimeLimit.restart_period_scale_ms": "default 0 (a fixed period)",
		"TimeLimit.restart_period_back_off": "default 1",
		"TimeLimit.max_execution_time_ms":   "a run longer than this is killed (probes: the request's timeout); default 1000 for probes, 10000 for handlers, none (0) for init",
		"Timing.period":                     "tend's shorthand: a fixed period (2s, 500ms) from the start of one run to the start of the next, time_limit's min_restart_period_ms and max_restart_period_ms; not with time_limit",
		"Timing.initial_delay":              "tend's shorthand: a duration (5s) before the first run, time_limit's initial_delay_ms; not with time_limit",
		"Timing.timeout":                    "tend's shorthand: a run longer than this duration (1s) is killed, time_limit's max_execution_time_ms; not with time_limit",

		"HTTPGet.scheme":          "https does TLS without verifying the certificate",
		"HTTPGet.port":            "default: instance.port ({NAME} substituted)",
		"HTTPGet.path":            "{NAME} substituted",
		"HTTPGet.host":            "the address to connect to",
		"HTTPGet.headers":         "sent with every request",
		"HTTPGet.expected_answer": "the exact body a success must have",
		"HTTPGet.any":             "any answer (or none) counts as a success",
		"TCPSocket.port":          "default: instance.port ({NAME} substituted)",
		"TCPSocket.host":          "the address to connect to",
		"Exec.command":            "succeeds when it exits 0",
		"UnixSignal.signal":       "a signal name (SIGINT or INT) sent to the root process",
		"Notify.watchdog_ms":      "systemd's WATCHDOG=1 must come this often",
		"Notify.fd":               "s6: ready when a newline is written to this file descriptor",
		"Handler.log_line":        "ready once a line of the output matches this RE2 expression",
		"Probe.failure_threshold": "consecutive failures that count",
		"Probe.success_threshold": "consecutive successes that count",

		"StopPolicy.max_tries":       "tries of the stop handler",
		"StopPolicy.wait_after_ms":   "wait after the handler, whatever its result, before SIGTERM",
		"StopPolicy.term_timeout_ms": "wait after SIGTERM before SIGKILL",
		"Policy.max_tries":           "tries of the handler",

		"Log.file":        "relative to instance.dir",
		"Log.max_size_mb": "the size at which the file is rotated",
		"Log.max_files":   "rotated files kept",

		"Resource.name":         "the file name in instance.dir",
		"Resource.urls":         "http, https, file, rbtorrent or sbr URLs, tried in order",
		"Resource.checksum":     "MD5:<hex>, SHA256:<hex> or EMPTY: (none)",
		"Resource.check_period": "re-verification period such as 0d1h0m; 0d0h0m: never",
		"Resource.extract":      "unpack the archive into a directory",
		"Resource.executable":   "make the file executable",
		"Resource.cached":       "keep the content in .tend/cache once the spec no longer names it, and take it from there when a later spec does",
		"Resource.size":         "bytes (as limits.memory) checked against the free space of instance.dir's filesystem before any download",
		"Resource.uuid":         "names the content: resources with the same uuid are the same content, fetched once",

		"DynamicResource.revision":               "a change of it (by a reload) fetches the new urls",
		"DynamicResource.storage_dir":            "revisions are kept in storage_dir/N",
		"DynamicResource.destination":            "a symlink to the current revision",
		"DynamicResource.cached_revisions_count": "revisions kept",
		"DynamicResource.verify":                 "checks a new revision; a failure rolls back",

		"File.path":      "relative to instance.dir (and inside it), or absolute",
		"File.content":   "the file's text ({NAME} substituted); not with from_file",
		"File.from_file": "a file copied byte for byte (a secret: never rendered or logged); not with content",
		"File.mode":      "octal permissions such as \"0640\"; owner instance.user and group when set",
	}
})
