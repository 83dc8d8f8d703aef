package cgroup

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Mode is how tend places containers: in cgroup v2, in cgroup v1, or not at all.
type Mode string

// The modes, as status shows them.
const (
	ModeV2  Mode = "v2"
	ModeV1  Mode = "v1"
	ModeOff Mode = "off"
)

// Kinds of groups under tend's starting cgroup (docs/reference.md "Cgroups and limits").
const (
	KindContainers = "containers"
	KindInit       = "init"
)

// v1Controllers are the v1 hierarchies tend uses: limits (cpu, memory, pids), CPU
// accounting (cpuacct) and a kill that no fork escapes (freezer).
var v1Controllers = []string{"cpu", "cpuacct", "memory", "pids", "freezer"}

// limitControllers are the controllers that carry limits. On v2 they are enabled for
// the groups where the parent offers them (cpuacct and freezer are built into every v2
// cgroup: cpu.stat, cgroup.freeze); on a hybrid host a container joins their v1
// hierarchies only for the limits it has.
var limitControllers = []string{"cpu", "memory", "pids"}

// place is one cgroup directory on disk and the controllers that act on it: on v2 one
// place holds every controller; on v1 each hierarchy is a place.
type place struct {
	dir         string
	controllers []string
}

// Tree is where tend creates the cgroups of its containers: its starting cgroup in every
// hierarchy it uses, or <start>/instance with instance.limits (SetLimits; docs/reference.md "Cgroups and limits"). Mode is ModeOff, with Reason saying why, where it cannot.
// A hybrid host is ModeV1 (its controllers, so its limits, are v1) with unified set.
type Tree struct {
	Mode    Mode
	Reason  string // why Mode is ModeOff
	start   string // tend's starting cgroup as /proc/self/cgroup shows it (v1: memory's; hybrid: unified's)
	places  []place
	unified string // hybrid: tend's starting cgroup's directory in the cgroup2 hierarchy

	mu       sync.Mutex
	kinds    map[string]*kindCPU // cgroup2: by directory, the CPU time of the groups of a kind
	made     map[string]error    // hybrid: v1 starts whose containers and init makeKinds made
	initMade bool                // makeInit made <start>/init

	// hybrid: where the v1 hierarchies are, probed by v1Places into places
	root     string
	paths    map[string]string
	v1Probed bool
	v1Err    error
	locks    []int  // flocked <start>/containers directories, held for tend's life
	instance string // the real instance.dir, marked on the groups it makes (claim); "" none

	// With instance.limits (SetLimits, nest) the tree is <start>/instance:
	bound   Limits   // the instance's limits; on a hybrid host every group joins their v1 hierarchies
	nested  []string // the <start>/instance directories made, removed by Close
	origins []string // the starting cgroups' directories, whose <start>/containers (the lock) Close removes
}

// Open decides where tend can create cgroups, for want "auto", "required" or "off", from
// /proc/self/cgroup and /sys/fs/cgroup under root ("/" in production). On cgroup v2 it
// moves the process self into the leaf <start>/tend and enables the cpu, memory and pids
// controllers below <start> and <start>/containers (<start>/init is made for the first
// init container, makeInit). On cgroup v1 it uses
// the v1 hierarchies, and on a hybrid host (v1 controllers and a controller-less cgroup2
// at /sys/fs/cgroup/unified) the cgroup2 one as well, for membership (see openUnified).
// Where it cannot, the tree is ModeOff with a Reason; that is an error only when want is
// "required".
func Open(root, want string, self int) (*Tree, error) {
	return OpenInstance(root, want, self, "")
}

// OpenInstance is Open for the instance whose real instance.dir is instance (docs/reference.md
// "What a container cannot make tend do"): it marks the <start>/containers and <start>/init it makes with it, and
// first kills and removes whatever an earlier tend of the same instance left in them
// (it crashed), whatever the groups' names. Groups another instance left there, or
// that no tend marked, are not its own: the tree is off, with a reason naming them.
// With instance "" nothing is marked or removed.
func OpenInstance(root, want string, self int, instance string) (*Tree, error) {
	var t *Tree
	switch want {
	case "off":
		t = off("want off")
	case "auto", "required", "":
		t = detect(root, self, instance)
		if t.Mode != ModeOff && instance != "" {
			t.removeLeftovers()
		}
	default:
		return nil, fmt.Errorf("cgroups: %q is not auto, required or off", want)
	}
	if want == "required" && t.Mode == ModeOff {
		return t, fmt.Errorf("cgroups: required, but %s", t.Reason)
	}
	return t, nil
}

// off is a tree without cgroups; its reason is one line (status shows it, and the
// errors it comes from may be joined ones).
func off(reason string) *Tree {
	return &Tree{Mode: ModeOff, Reason: strings.ReplaceAll(reason, "\n", "; ")}
}

// detect picks v2 where /sys/fs/cgroup is a cgroup2 mount (it has cgroup.controllers),
// else the v1 hierarchies below it.
func detect(root string, self int, instance string) *Tree {
	mount := filepath.Join(root, "sys/fs/cgroup")
	paths := selfCgroups(root)
	if exists(filepath.Join(mount, "cgroup.controllers")) {
		if readOnly(mount) {
			return off("/sys/fs/cgroup is read-only")
		}
		start, ok := paths[""]
		if !ok {
			return off(`/proc/self/cgroup has no cgroup v2 line ("0::/path")`)
		}
		t, err := openV2(mount, start, self, instance)
		if err != nil {
			return off(err.Error())
		}
		return t
	}
	if unified, start := filepath.Join(mount, "unified"), paths[""]; usable(unified, start) {
		// The v1 hierarchies are probed at the first limit (v1Places).
		t := &Tree{Mode: ModeV1, root: root, paths: paths, instance: instance}
		if err := t.openUnified(unified, start); err != nil {
			return off(err.Error())
		}
		return t
	}
	t, err := openV1(root, paths, v1Controllers, false, instance)
	if err != nil {
		if readOnly(mount) {
			return off("/sys/fs/cgroup is read-only")
		}
		return off(err.Error())
	}
	return t
}

// usable says whether a cgroup2 hierarchy is mounted at mount with tend's starting
// cgroup there, start, writable.
func usable(mount, start string) bool {
	return start != "" && exists(filepath.Join(mount, "cgroup.controllers")) && !readOnly(mount) &&
		unix.Access(onDisk(mount, start), unix.W_OK) == nil
}

// openUnified makes a v1 tree hybrid with the cgroup2 hierarchy at mount, where tend
// started in start (see usable): every process of a container then starts in
// <start>/containers/NAME of that hierarchy by clone3's CLONE_INTO_CGROUP, which
// migrates nothing, is killed from there (cgroup.freeze) and has its CPU time there
// (cpu.stat). Only a container with limits also joins the v1 hierarchies of those
// limits, through the exec shim: each v1 migration waits for an RCU grace period, about
// 14 ms on a loaded host.
func (t *Tree) openUnified(mount, start string) error {
	dir := onDisk(mount, start)
	lock, err := lockContainers(dir, t.instance)
	if err != nil {
		return err
	}
	t.locks = append(t.locks, lock)
	t.start, t.unified = path.Clean("/"+start), dir
	t.made = map[string]error{}
	return nil
}

// makeKinds makes <start>/containers and <start>/init in the v1 hierarchy at start and
// takes its lock, once, for a hybrid tree: the first container with a limit there.
// Containers are opened one at a time, but a reload may open one while another runs.
func (t *Tree) makeKinds(start string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err, ok := t.made[start]; ok {
		return err
	}
	err := errors.Join(mkdir(filepath.Join(start, KindContainers)), t.mkKind(filepath.Join(start, KindInit)))
	if err == nil {
		var lock int
		if lock, err = lockContainers(start, t.instance); err == nil {
			t.locks = append(t.locks, lock)
		}
	}
	t.made[start] = err
	return err
}

// makeInit makes <start>/init where Open made <start>/containers, once, for the first
// init container: most instances have none, and a cgroup takes 20–60 µs to make
// before the first exec. On v2 it gets the controllers <start>/containers has.
func (t *Tree) makeInit() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.initMade {
		return nil
	}
	var err error
	switch {
	case t.unified != "":
		err = t.mkKind(filepath.Join(t.unified, KindInit))
	case t.Mode == ModeV2:
		dir := filepath.Join(t.places[0].dir, KindInit)
		if err = t.mkKind(dir); err == nil {
			enable(dir, t.places[0].controllers)
		}
	default:
		for _, p := range t.places {
			err = cmp.Or(err, t.mkKind(filepath.Join(p.dir, KindInit)))
		}
	}
	if err != nil {
		return err // "mkdir PATH: ..."
	}
	t.initMade = true
	return nil
}

// v1Places are the v1 hierarchies of a hybrid tree (those of limitControllers where
// <start> is writable), probed once, at the first limit that needs them: most
// instances set none, and the probe is a dozen lookups before the first exec.
// cpuacct and freezer are the cgroup2 group's cpu.stat and cgroup.freeze.
func (t *Tree) v1Places() ([]place, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.v1Probed {
		v1, err := openV1(t.root, t.paths, limitControllers, true, t.instance)
		if err == nil {
			t.places = v1.places
		}
		t.v1Probed, t.v1Err = true, err
	}
	return t.places, t.v1Err
}

// under are the places of <start>/sub, for the places of <start>.
func under(places []place, sub string) []place {
	var out []place
	for _, p := range places {
		out = append(out, place{filepath.Join(p.dir, sub), p.controllers})
	}
	return out
}

// openV2 makes mount/start tend's tree. cgroup v2 lets only leaves hold processes once
// a cgroup enables controllers for its children (the "no internal process" rule), and
// systemd's delegation rules say the same of a delegated subtree: so tend first moves
// itself into <start>/tend, then enables controllers in <start> for its children.
func openV2(mount, start string, self int, instance string) (*Tree, error) {
	dir := onDisk(mount, start)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("not root and no writable cgroup v2 subtree at %s", start)
		}
		return nil, fmt.Errorf("cgroup %s is not writable: %w", start, err)
	}
	lock, err := lockContainers(dir, instance)
	if err != nil {
		return nil, err
	}
	t := &Tree{Mode: ModeV2, start: start, locks: []int{lock}, instance: instance}
	leaf := filepath.Join(dir, "tend")
	if err := mkdir(leaf); err != nil {
		t.unlock()
		return nil, fmt.Errorf("create the leaf for tend itself: %w", err)
	}
	if err := writeFile(leaf, "cgroup.procs", strconv.Itoa(self)); err != nil {
		t.unlock()
		return nil, fmt.Errorf("move tend into %s: %w", path.Join(start, "tend"), err)
	}
	enabled := enable(dir, strings.Fields(readFile(dir, "cgroup.controllers")))
	enable(filepath.Join(dir, KindContainers), enabled)
	t.places = []place{{dir, enabled}}
	return t, nil
}

// enable turns on the controllers tend uses, of those offered, for the children of dir
// and returns the ones that took. One write does them all; if it fails (one controller
// refused, e.g. a threaded cgroup), each is tried alone.
func enable(dir string, offered []string) []string {
	var want []string
	for _, c := range limitControllers {
		if slices.Contains(offered, c) {
			want = append(want, c)
		}
	}
	if len(want) == 0 || writeFile(dir, "cgroup.subtree_control", "+"+strings.Join(want, " +")) == nil {
		return want
	}
	var took []string
	for _, c := range want {
		if writeFile(dir, "cgroup.subtree_control", "+"+c) == nil {
			took = append(took, c)
		}
	}
	return took
}

// openV1 uses every v1 hierarchy of controllers that is mounted and where tend can
// create <start>/containers (as root). Unlike v2, a v1 cgroup may hold
// processes and children at once, so tend stays where it started. lazy (hybrid) only
// checks that <start> is writable: containers and init are made at the first limit that
// needs them (Tree.makeKinds), as a v1 memory cgroup takes about 0.1 ms to make.
func openV1(root string, paths map[string]string, controllers []string, lazy bool, instance string) (*Tree, error) {
	t := &Tree{Mode: ModeV1, instance: instance}
	var firstErr error
	for _, c := range controllers {
		mount := v1Mount(root, paths, c)
		if !exists(filepath.Join(mount, "cgroup.procs")) {
			continue
		}
		start, _ := controllerPath(paths, c)
		dir := onDisk(mount, start)
		if i := t.placeOf(dir); i >= 0 { // cpu and cpuacct share "cpu,cpuacct"
			t.places[i].controllers = append(t.places[i].controllers, c)
			continue
		}
		if lazy {
			if err := unix.Access(dir, unix.W_OK); err != nil {
				firstErr = cmp.Or(firstErr, error(&fs.PathError{Op: "access", Path: dir, Err: err}))
				continue
			}
		} else {
			lock, err := lockContainers(dir, instance)
			if errors.Is(err, errInUse) || errors.Is(err, errNotOurs) {
				t.unlock()
				return nil, err
			}
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			t.locks = append(t.locks, lock)
		}
		t.places = append(t.places, place{dir, []string{c}})
		if t.start == "" || c == "memory" {
			t.start = path.Clean("/" + start)
		}
	}
	switch {
	case len(t.places) > 0:
		return t, nil
	case firstErr != nil && os.Geteuid() != 0:
		return nil, fmt.Errorf("not root and no writable cgroup v2 subtree (v1: %w)", firstErr)
	case firstErr != nil:
		return nil, fmt.Errorf("cgroup v1 hierarchies are not writable: %w", firstErr)
	}
	return nil, errors.New("no cgroup hierarchy under /sys/fs/cgroup")
}

func (t *Tree) placeOf(dir string) int {
	for i, p := range t.places {
		if p.dir == dir {
			return i
		}
	}
	return -1
}

// InstanceGroup is the cgroup tend makes below its starting one when the spec sets
// instance.limits (docs/reference.md "Cgroups and limits" and "What a container cannot make tend do"): it holds /containers and /init, so the limits
// bound all containers and init containers together, and never tend itself, which stays
// in its starting cgroup (v2: its leaf <start>/tend). Without instance.limits there is
// none and the groups are <start>/containers/NAME and <start>/init/NAME.
const InstanceGroup = "instance"

// SetLimits writes instance.limits (docs/reference.md "Cgroups and limits") to <start>/instance, which it makes in
// every hierarchy used and moves the tree onto: the containers' and init containers'
// groups are made below it from then on (call it before the first Group). It never
// writes a limit to tend's starting cgroup: tend did not make that one, whatever
// launched tend (a login shell, a service, a CI job) is in it and keeps it after tend
// exits, and a limit there would bound tend itself, so the kernel's OOM killer could
// pick tend for its containers' memory. Limits that cannot be written are returned,
// one per limit.
func (t *Tree) SetLimits(l Limits) []LimitError {
	if t.Mode == ModeOff || !l.any() {
		return setLimits(t.Mode, t.Reason, nil, l, false)
	}
	if t.unified != "" {
		// A hybrid tree's limits are v1 files, in the hierarchies v1Places probes.
		if _, err := t.v1Places(); err != nil {
			return l.failed(err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	places, err := t.nest()
	if err != nil {
		return l.failed(fmt.Errorf("cgroup %s: %w", path.Join(t.start, InstanceGroup), err))
	}
	t.bound = l
	return setLimits(t.Mode, t.Reason, places, l, false)
}

// nest makes <start>/instance and <start>/instance/containers in every hierarchy used
// (v2: enabling below each the controllers <start> enables) and moves the tree onto
// <start>/instance. It returns the places to write the instance's limits to. What it
// made is removed again if it fails. The caller holds t.mu.
func (t *Tree) nest() ([]place, error) {
	var made []string
	mk := func(dir string) error {
		if err := mkdir(dir); err != nil {
			for i := len(made) - 1; i >= 0; i-- {
				unix.Rmdir(made[i])
			}
			return err
		}
		made = append(made, dir)
		return nil
	}
	var origins, nested []string
	unified := t.unified
	if unified != "" {
		unified = filepath.Join(t.unified, InstanceGroup)
		if err := errors.Join(mk(unified), mk(filepath.Join(unified, KindContainers))); err != nil {
			return nil, err
		}
		if err := t.mkKind(filepath.Join(unified, KindContainers)); err != nil {
			return nil, err
		}
		origins, nested = append(origins, t.unified), append(nested, unified)
	}
	var limited, moved []place
	for _, p := range t.places {
		dir := filepath.Join(p.dir, InstanceGroup)
		if err := mk(dir); err != nil {
			return nil, err
		}
		nested = append(nested, dir)
		limited = append(limited, place{dir, p.controllers})
		below := p.controllers
		switch {
		case t.Mode == ModeV2:
			below = enable(dir, p.controllers)
			if err := mk(filepath.Join(dir, KindContainers)); err != nil {
				return nil, err
			}
			t.mkKind(filepath.Join(dir, KindContainers))
			enable(filepath.Join(dir, KindContainers), below)
			origins = append(origins, p.dir)
		case t.unified == "":
			if err := mk(filepath.Join(dir, KindContainers)); err != nil {
				return nil, err
			}
			t.mkKind(filepath.Join(dir, KindContainers))
			origins = append(origins, p.dir)
		}
		moved = append(moved, place{dir, below})
	}
	t.places, t.unified, t.start = moved, unified, path.Join(t.start, InstanceGroup)
	t.origins, t.nested = origins, nested
	return limited, nil
}

// Group creates the cgroup <start>/<kind>/<name> in every hierarchy used; kind is
// KindContainers or KindInit. One left by an earlier tend that crashed is killed and
// made anew. With cgroups off it returns a Group that does nothing (Path "").
func (t *Tree) Group(kind, name string) (*Group, error) {
	if kind != KindContainers && kind != KindInit {
		return nil, fmt.Errorf("cgroup kind %q is not %s or %s", kind, KindContainers, KindInit)
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("cgroup name %q is not a single path element", name)
	}
	g := &Group{mode: t.Mode, reason: t.Reason, fd: -1}
	if t.Mode == ModeOff {
		return g, nil
	}
	if kind == KindInit {
		if err := t.makeInit(); err != nil {
			return nil, err
		}
	}
	g.path, g.sub = path.Join(t.start, kind, name), filepath.Join(kind, name)
	if t.unified != "" {
		// Its v1 places come with its first limit (SetLimits).
		g.unified, g.tree = filepath.Join(t.unified, kind, name), t
	} else {
		g.places = under(t.places, g.sub)
	}
	if err := g.create(); err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", g.path, err)
	}
	switch {
	case g.unified != "":
		g.kind = t.kindCPU(filepath.Dir(g.unified))
	case t.Mode == ModeV2 && len(g.places) > 0:
		g.kind = t.kindCPU(filepath.Dir(g.places[0].dir))
	}
	if kind == KindInit && t.unified != "" && t.bound.any() {
		// An init container has no limits of its own: it joins the v1 hierarchies of
		// the instance's here (a container does in its SetLimits).
		if errs := g.SetLimits(Limits{}); len(errs) > 0 {
			g.Remove()
			return nil, fmt.Errorf("cgroup %s: %w", g.path, errs[0])
		}
	}
	return g, nil
}

// kindCPU is the CPU time of the groups of a kind in the cgroup2 directory dir, one
// for all of them.
func (t *Tree) kindCPU(dir string) *kindCPU {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.kinds[dir]
	if k == nil {
		if t.kinds == nil {
			t.kinds = map[string]*kindCPU{}
		}
		k = &kindCPU{dir: dir, fd: -1, buf: make([]byte, 1024)}
		t.kinds[dir] = k
	}
	return k
}

// Close removes <start>/containers and <start>/init where they are empty and releases
// the lock on <start>/containers. tend stays in its leaf: it is exiting.
func (t *Tree) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.unlock()
	for _, k := range t.kinds {
		k.close()
	}
	var errs []error
	rmdir := func(dir string) {
		err := unix.Rmdir(dir)
		if err != nil && err != unix.ENOENT && err != unix.EBUSY && err != unix.ENOTEMPTY {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	dirs := []string{t.unified}
	for _, p := range t.places {
		if err, ok := t.made[p.dir]; t.unified == "" || (ok && err == nil) {
			dirs = append(dirs, p.dir) // hybrid: only those it made (and locked)
		}
	}
	kinds := func(dirs []string) {
		for _, dir := range dirs {
			if dir != "" {
				rmdir(filepath.Join(dir, KindContainers))
				rmdir(filepath.Join(dir, KindInit))
			}
		}
	}
	kinds(append(dirs, t.nested...)) // a nested hybrid tree's v1 places are its own
	for _, dir := range t.nested {
		rmdir(dir)
	}
	kinds(t.origins)
	return errors.Join(errs...)
}

// errInUse is lockContainers' answer when another tend holds the lock.
var errInUse = errors.New("another tend uses")

// lockContainers creates dir/containers and takes an exclusive flock on it, so that
// two tends started in the same cgroup (two `tend run` in one shell, parallel tests)
// do not share <start>/containers/NAME: Group kills a group it finds, taking it for a
// crashed tend's leftover. kernfs takes flock on directories like any file; the lock
// goes with the process, so a crashed tend never leaves it behind.
//
// With instance set (the real instance.dir) it also claims the directory for that
// instance (claim): one another instance marked, or that holds groups no tend marked,
// is not this tend's.
func lockContainers(dir, instance string) (int, error) {
	locked := filepath.Join(dir, KindContainers)
	if err := mkdir(locked); err != nil {
		return -1, err // "mkdir PATH: ..." says it all
	}
	fd, err := unix.Open(locked, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", locked, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			if mark := instanceMark(locked); mark != "" {
				return -1, fmt.Errorf("%w %s (instance %s)", errInUse, locked, mark)
			}
			return -1, fmt.Errorf("%w %s", errInUse, locked)
		}
		return -1, fmt.Errorf("lock %s: %w", locked, err)
	}
	if err := claim(locked, instance); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// unlock releases the locks on <start>/containers (closing the fd drops the flock).
func (t *Tree) unlock() {
	for _, fd := range t.locks {
		unix.Close(fd)
	}
	t.locks = nil
}

// onDisk is the directory of cgroup start under mount. In a container without a cgroup
// namespace /proc/self/cgroup shows the host's path while the mount is the container's
// own cgroup: then that is the mount itself.
func onDisk(mount, start string) string {
	dir := filepath.Join(mount, path.Clean("/"+start))
	if !exists(dir) {
		return mount
	}
	return dir
}

// readOnly says whether the filesystem at dir is mounted read-only.
func readOnly(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

// mkdir creates a cgroup directory; one that exists is fine.
func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// writeFile writes one value to a cgroup file, as one write(2): the kernel takes a
// control file's value from a single write. O_CREATE lets tests use plain directories;
// cgroupfs has the file already.
func writeFile(dir, name, value string) error {
	p := filepath.Join(dir, name)
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &fs.PathError{Op: "open", Path: p, Err: err}
	}
	_, err = unix.Write(fd, []byte(value))
	if err != nil {
		err = &fs.PathError{Op: "write", Path: p, Err: err}
	}
	return errors.Join(err, unix.Close(fd))
}
