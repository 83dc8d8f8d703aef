package spec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"
)

// Rlimit is one resource limit as written (docs/reference.md "Identity and limits"): a number or
// "unlimited" sets both; {soft, hard} sets each. Validation checks the values.
type Rlimit struct {
	Soft string `yaml:"soft" json:"soft"`
	Hard string `yaml:"hard" json:"hard"`
}

// Identity is who a container's processes run as and with which limits: resolved by
// Load from user, group and rlimits of the container (or init container) and of
// instance. A nil *Identity is tend's own user and limits.
type Identity struct {
	// HasUser tells that UID, GID and Groups apply; false: only Rlimits.
	HasUser bool
	UID     uint32
	GID     uint32
	Groups  []uint32 // supplementary groups (from /etc/group for a named user)
	// Name and Home go to USER, LOGNAME and HOME (unless env sets them).
	Name string
	Home string
	// Rlimits are set in the process before its program starts.
	Rlimits []Limit
}

// Limit is one resolved resource limit; unix.RLIM_INFINITY is unlimited.
type Limit struct {
	Resource int
	Soft     uint64
	Hard     uint64
}

// rlimitNames are the names of ulimit and docker --ulimit.
var rlimitNames = map[string]int{
	"as": unix.RLIMIT_AS, "core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU,
	"data": unix.RLIMIT_DATA, "fsize": unix.RLIMIT_FSIZE, "locks": unix.RLIMIT_LOCKS,
	"memlock": unix.RLIMIT_MEMLOCK, "msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE,
	"nofile": unix.RLIMIT_NOFILE, "nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS,
	"rtprio": unix.RLIMIT_RTPRIO, "rttime": unix.RLIMIT_RTTIME,
	"sigpending": unix.RLIMIT_SIGPENDING, "stack": unix.RLIMIT_STACK,
}

// Where the user and group databases are; tests point them elsewhere.
var (
	passwdFile = "/etc/passwd"
	groupFile  = "/etc/group"
)

// Identity is the resolved identity of the container's processes; nil for tend's own.
func (c *Container) Identity() *Identity { return c.ident }

// Identity is the resolved identity of the init container's process; nil for tend's own.
func (c *InitContainer) Identity() *Identity { return c.ident }

// Identity is the instance's user, group and rlimits: those of the processes that
// belong to no container (the verify commands of dynamic resources); nil for tend's own.
func (in *Instance) Identity() *Identity { return in.ident }

// NeedsRoot lists the paths of the user and group fields: running them takes root.
func (s *Spec) NeedsRoot() []string {
	var paths []string
	add := func(path, user, group string) {
		if user != "" || group != "" {
			paths = append(paths, path)
		}
	}
	add("instance", s.Instance.User, s.Instance.Group)
	for i, ic := range s.InitContainers {
		add(index("init_containers", i), ic.User, ic.Group)
	}
	for i, c := range s.Containers {
		add(index("containers", i), c.User, c.Group)
	}
	return paths
}

// ProcessEnvAs is ProcessEnv for a process that runs as id: a named user's HOME, USER
// and LOGNAME (HOME=/ for a numeric one) replace tend's own, unless env_files or an
// env list of the spec set them.
func (s *Spec) ProcessEnvAs(own []EnvVar, id *Identity) []string {
	return s.envWith(s.identityPre(nil, id), own)
}

// identityPre adds to pre the assignments of a user's HOME, USER and LOGNAME.
func (s *Spec) identityPre(pre [][2]string, id *Identity) [][2]string {
	if id == nil || !id.HasUser {
		return pre
	}
	set := func(k, v string) {
		if !s.specEnv[k] {
			pre = append(pre, [2]string{k, v})
		}
	}
	set("HOME", id.Home)
	if id.Name != "" {
		set("USER", id.Name)
		set("LOGNAME", id.Name)
	}
	return pre
}

// identityKeys are the variables tend sets per process (a user's, a container's
// limits); specEnvKeys tells which of them the spec's env_files and env set (compared
// with before, tend's environment and the instance's limits).
var identityKeys = []string{"HOME", "USER", "LOGNAME", limitCPUVar, limitMemVar}

func identityEnv(e *envList) map[string]*string {
	m := map[string]*string{}
	for _, k := range identityKeys {
		if v, ok := e.get(k); ok {
			m[k] = &v
		}
	}
	return m
}

func specEnvKeys(e *envList, before map[string]*string) map[string]bool {
	set := map[string]bool{}
	for k, v := range identityEnv(e) {
		if before[k] == nil || *before[k] != *v {
			set[k] = true
		}
	}
	return set
}

// resolveIdentities checks and resolves user, group and rlimits of every level.
func resolveIdentities(s *Spec, c *collector) {
	r := &idResolver{c: c}
	in := &s.Instance
	r.limits("instance.rlimits", in.Rlimits)
	if in.User != "" || in.Group != "" {
		r.lookup("instance", in.User, in.Group) // reported once, here
	}
	in.ident = r.resolve("", in, "", "", nil)
	for i := range s.InitContainers {
		ic := &s.InitContainers[i]
		ic.ident = r.resolve(index("init_containers", i), in, ic.User, ic.Group, ic.Rlimits)
	}
	for i := range s.Containers {
		ct := &s.Containers[i]
		ct.ident = r.resolve(index("containers", i), in, ct.User, ct.Group, ct.Rlimits)
	}
}

type idResolver struct {
	c      *collector
	passwd []passwdEntry
	groups []groupEntry
	read   bool
	err    error
}

type passwdEntry struct {
	name     string
	uid, gid uint32
	home     string
}

type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// resolve is the identity at path: its own user and group, else the instance's; its
// rlimits over the instance's, name by name.
func (r *idResolver) resolve(path string, in *Instance, user, group string, rl map[string]Rlimit) *Identity {
	id := &Identity{}
	switch {
	case user != "" || group != "":
		*id = r.lookup(path, user, group)
	case in.User != "" || in.Group != "":
		*id = r.lookup("", in.User, in.Group)
	}
	for _, l := range r.limits(join(path, "rlimits"), rl) {
		id.Rlimits = append(id.Rlimits, l)
	}
	for k, v := range in.Rlimits {
		if _, own := rl[k]; own {
			continue
		}
		if l, ok := parseLimit(rlimitNames[k], v); ok == "" {
			id.Rlimits = append(id.Rlimits, l)
		}
	}
	slices.SortFunc(id.Rlimits, func(a, b Limit) int { return a.Resource - b.Resource })
	if !id.HasUser && len(id.Rlimits) == 0 {
		return nil
	}
	return id
}

// limits checks rlimits at path; the valid ones come back by name.
func (r *idResolver) limits(path string, rl map[string]Rlimit) map[string]Limit {
	out := map[string]Limit{}
	names := slices.Sorted(maps.Keys(rl))
	for _, name := range names {
		v := rl[name]
		res, ok := rlimitNames[name]
		if !ok {
			known := slices.Sorted(maps.Keys(rlimitNames))
			r.c.addf(join(path, name), "unknown resource limit, want one of %s", strings.Join(known, ", "))
			continue
		}
		l, msg := parseLimit(res, v)
		if msg != "" {
			r.c.addf(join(path, name), "%s", msg)
			continue
		}
		out[name] = l
	}
	return out
}

// parseLimit turns a written limit into numbers; the message says what is wrong.
func parseLimit(res int, v Rlimit) (Limit, string) {
	soft, err := limitValue(v.Soft)
	if err != "" && v.Soft == v.Hard {
		return Limit{}, err
	}
	if err != "" {
		return Limit{}, "soft: " + err
	}
	hard, err := limitValue(v.Hard)
	if err != "" {
		return Limit{}, "hard: " + err
	}
	if soft > hard {
		return Limit{}, fmt.Sprintf("soft limit %s is above the hard limit %s", v.Soft, v.Hard)
	}
	return Limit{Resource: res, Soft: soft, Hard: hard}, ""
}

func limitValue(s string) (uint64, string) {
	if s == "unlimited" {
		return unix.RLIM_INFINITY, ""
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == unix.RLIM_INFINITY {
		return 0, fmt.Sprintf("must be a number 0 or more or unlimited, got %q", s)
	}
	return n, ""
}

// lookup resolves a user and group; errors are recorded at path ("" records none: the
// instance's were reported at instance).
func (r *idResolver) lookup(path, user, group string) Identity {
	addf := func(field, format string, args ...any) {
		if path != "" {
			r.c.addf(join(path, field), format, args...)
		}
	}
	if user == "" {
		addf("group", "needs user (user: root keeps tend's user)")
		return Identity{}
	}
	r.readFiles()
	id := Identity{HasUser: true, Home: "/"}
	var entry *passwdEntry
	if uid, err := strconv.ParseUint(user, 10, 32); err == nil {
		id.UID = uint32(uid)
		for i := range r.passwd {
			if r.passwd[i].uid == id.UID {
				entry = &r.passwd[i]
				break
			}
		}
		if entry == nil && group == "" {
			addf("group", "must be set: user %s has no entry in %s", user, passwdFile)
		}
	} else {
		for i := range r.passwd {
			if r.passwd[i].name == user {
				entry = &r.passwd[i]
				break
			}
		}
		if entry == nil {
			addf("user", "unknown user %q (not in %s%s)", user, passwdFile, r.why())
		}
	}
	if entry != nil {
		id.UID, id.GID, id.Name, id.Home = entry.uid, entry.gid, entry.name, entry.home
		if id.Home == "" {
			id.Home = "/"
		}
	}
	if group != "" {
		if gid, err := strconv.ParseUint(group, 10, 32); err == nil {
			id.GID = uint32(gid)
		} else if g := r.group(group); g != nil {
			id.GID = g.gid
		} else {
			addf("group", "unknown group %q (not in %s%s)", group, groupFile, r.why())
		}
	}
	if entry != nil {
		for _, g := range r.groups {
			if slices.Contains(g.members, entry.name) && g.gid != id.GID && !slices.Contains(id.Groups, g.gid) {
				id.Groups = append(id.Groups, g.gid)
			}
		}
	}
	return id
}

func (r *idResolver) group(name string) *groupEntry {
	for i := range r.groups {
		if r.groups[i].name == name {
			return &r.groups[i]
		}
	}
	return nil
}

// why adds the reason a database could not be read to an "unknown" message.
func (r *idResolver) why() string {
	if r.err != nil {
		return ": " + r.err.Error()
	}
	return ""
}

// readFiles parses /etc/passwd and /etc/group once (no cgo, no NSS: a static binary
// in a FROM scratch image has only these files, or none and numeric ids). A missing
// file is an empty database.
func (r *idResolver) readFiles() {
	if r.read {
		return
	}
	r.read = true
	for _, f := range []struct {
		path string
		line func([]string)
	}{
		{passwdFile, func(f []string) {
			if len(f) >= 6 {
				uid, err1 := strconv.ParseUint(f[2], 10, 32)
				gid, err2 := strconv.ParseUint(f[3], 10, 32)
				if err1 == nil && err2 == nil {
					r.passwd = append(r.passwd, passwdEntry{name: f[0], uid: uint32(uid), gid: uint32(gid), home: f[5]})
				}
			}
		}},
		{groupFile, func(f []string) {
			if len(f) >= 4 {
				if gid, err := strconv.ParseUint(f[2], 10, 32); err == nil {
					var members []string
					if f[3] != "" {
						members = strings.Split(f[3], ",")
					}
					r.groups = append(r.groups, groupEntry{name: f[0], gid: uint32(gid), members: members})
				}
			}
		}},
	} {
		data, err := readSmallFile("", f.path)
		if err != nil {
			if !os.IsNotExist(err) && r.err == nil {
				r.err = err
			}
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, len(data)+1)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
				continue // comments and NIS entries
			}
			f.line(strings.Split(line, ":"))
		}
	}
}

var rlimitType = reflect.TypeFor[Rlimit]()

// rlimit checks the shape of a limit: a scalar, or a mapping of soft and hard.
func (w *walker) rlimit(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.ScalarNode:
	case yaml.MappingNode:
		w.mapping(n, rlimitType, path)
	default:
		w.c.structf(path, n.Line, "must be a number, unlimited or {soft, hard}, got %s", DescribeNode(n))
	}
}

// UnmarshalYAML accepts a number or unlimited (both limits) or {soft, hard}.
func (r *Rlimit) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode {
		*r = Rlimit{Soft: n.Value, Hard: n.Value}
		return nil
	}
	type plain Rlimit
	return n.Decode((*plain)(r))
}

// MarshalYAML writes one value when soft and hard are the same.
func (r Rlimit) MarshalYAML() (any, error) {
	if r.Soft == r.Hard {
		return limitDoc(r.Soft), nil
	}
	return map[string]any{"soft": limitDoc(r.Soft), "hard": limitDoc(r.Hard)}, nil
}

// MarshalJSON writes one value when soft and hard are the same.
func (r Rlimit) MarshalJSON() ([]byte, error) {
	v, _ := r.MarshalYAML()
	return json.Marshal(v)
}

// UnmarshalJSON accepts a number or "unlimited" (both limits) or {soft, hard}.
func (r *Rlimit) UnmarshalJSON(data []byte) error {
	return yaml.Unmarshal(data, r) // JSON is YAML
}

// limitDoc is a number as a number, anything else (unlimited) as a string.
func limitDoc(s string) any {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n
	}
	return s
}

// RlimitName is the name of a resource limit ("nofile"), for messages.
func RlimitName(res int) string {
	for name, r := range rlimitNames {
		if r == res {
			return name
		}
	}
	return strconv.Itoa(res)
}

// KeepLines is how many lines of output the container keeps for GET /v1/logs:
// log.keep_lines, DefaultKeepLines without a log section.
func (c *Container) KeepLines() int {
	if c.Log == nil || !c.Log.KeepLines.IsSet() {
		return DefaultKeepLines
	}
	return c.Log.KeepLines.Get()
}

// ContainerEnv is the full environment of container c's processes: ProcessEnvAs, with
// CPU_LIMIT and MEM_LIMIT of c's own limits where it has them (the base has the
// instance's, else those of tend's cgroup), unless env_files or the top-level env set
// them.
func (s *Spec) ContainerEnv(c *Container) []string {
	var pre [][2]string
	for k, v := range limitVars(c.Limits) {
		if !s.specEnv[k] {
			pre = append(pre, [2]string{k, v})
		}
	}
	return s.envWith(s.identityPre(pre, c.Identity()), c.Env)
}
