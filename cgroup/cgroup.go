// Package cgroup owns tend's cgroups: the tree under tend's starting cgroup where each
// container gets a group of its own (v2, v1, or off with a reason), with its limits, its
// usage and a kill that nothing in it escapes. It also reads the limits of tend's own
// cgroup as instancectl's CPU_LIMIT, CPU_GUARANTEE, MEM_LIMIT and MEM_GUARANTEE
// variables; everything works under a filesystem root, so tests run on fixture trees.
package cgroup

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Names of the variables, as ISS instances get them.
const (
	CPULimit     = "CPU_LIMIT"     // cores, "1.5c"
	CPUGuarantee = "CPU_GUARANTEE" // cores, "0.25c"
	MemLimit     = "MEM_LIMIT"     // bytes
	MemGuarantee = "MEM_GUARANTEE" // bytes
)

// Defaults that mean "not set" and are left out.
const (
	defaultWeight = 100  // cgroup v2 cpu.weight
	defaultShares = 1024 // cgroup v1 cpu.shares
	// v1 reports "no limit" as the largest page-aligned int64 (9223372036854771712);
	// anything from 2^60 bytes up is treated as no limit.
	unlimitedV1 = 1 << 60
)

// OwnLimits reads the limits of the running process's cgroup as instancectl's
// variables. Only limits that are set appear; an unreadable or absent cgroup gives an
// empty map.
func OwnLimits() map[string]string { return Read("/") }

// Read is OwnLimits with /proc and /sys under root.
func Read(root string) map[string]string {
	out := map[string]string{}
	paths := selfCgroups(root)
	v2root := filepath.Join(root, "sys/fs/cgroup")
	if p, ok := paths[""]; ok && exists(filepath.Join(v2root, "cgroup.controllers")) {
		readV2(dirs(v2root, p), out)
		return out
	}
	cpu, ok := controllerPath(paths, "cpu")
	if ok {
		readV1CPU(dirs(v1Mount(root, paths, "cpu"), cpu), out)
	}
	if mem, ok := controllerPath(paths, "memory"); ok {
		readV1Memory(dirs(v1Mount(root, paths, "memory"), mem), out)
	}
	return out
}

// selfCgroups is /proc/self/cgroup under root: controller list -> path ("" for v2's
// "0::/path"). Under "/" it is read once, the first time, and kept: tend reads its
// limits (OwnLimits) at launch and opens its tree (Open) a moment later, both from its
// starting cgroup (docs/reference.md "Cgroups and limits"), and on cgroup v2 Open then moves tend out of it. The map
// is shared: callers only read it.
func selfCgroups(root string) map[string]string {
	if root != "/" {
		return parseSelfCgroups(root)
	}
	started.once.Do(func() { started.paths = parseSelfCgroups(root) })
	return started.paths
}

// started is tend's starting cgroup, as selfCgroups keeps it.
var started struct {
	once  sync.Once
	paths map[string]string
}

func parseSelfCgroups(root string) map[string]string {
	data, err := readSmall(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for len(data) > 0 {
		var line []byte
		line, data = nextLine(data)
		parts := strings.SplitN(string(line), ":", 3)
		if len(parts) == 3 {
			out[parts[1]] = parts[2]
		}
	}
	return out
}

// controllerPath finds the v1 path of a controller, which may share a hierarchy
// ("cpu,cpuacct").
func controllerPath(paths map[string]string, controller string) (string, bool) {
	for list, p := range paths {
		for _, c := range strings.Split(list, ",") {
			if c == controller {
				return p, true
			}
		}
	}
	return "", false
}

// v1Mount is the v1 hierarchy directory of a controller: sys/fs/cgroup/<list> as
// /proc/self/cgroup names it ("cpu,cpuacct"), or sys/fs/cgroup/<controller>.
func v1Mount(root string, paths map[string]string, controller string) string {
	for list := range paths {
		for _, c := range strings.Split(list, ",") {
			if c == controller {
				if dir := filepath.Join(root, "sys/fs/cgroup", list); exists(dir) {
					return dir
				}
			}
		}
	}
	return filepath.Join(root, "sys/fs/cgroup", controller)
}

// dirs lists the cgroup's directory and its ancestors up to the mount, nearest first.
// In a container the mount often is the cgroup itself while /proc/self/cgroup shows
// the host's path (no cgroup namespace): then only the mount is used.
func dirs(mount, cgroupPath string) []string {
	cgroupPath = path.Clean("/" + cgroupPath)
	if !exists(filepath.Join(mount, cgroupPath)) {
		return []string{mount}
	}
	var out []string
	for p := cgroupPath; ; p = path.Dir(p) {
		out = append(out, filepath.Join(mount, p))
		if p == "/" {
			return out
		}
	}
}

// readV2 sets the variables from cgroup v2 files. Limits are the strictest along the
// path up to the mount; guarantees are the cgroup's own.
func readV2(dirs []string, out map[string]string) {
	var cpu float64
	for _, d := range dirs {
		fields := strings.Fields(readFile(d, "cpu.max"))
		if len(fields) != 2 || fields[0] == "max" {
			continue
		}
		quota, err1 := strconv.ParseFloat(fields[0], 64)
		period, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 == nil && err2 == nil && quota > 0 && period > 0 && (cpu == 0 || quota/period < cpu) {
			cpu = quota / period
		}
	}
	if cpu > 0 {
		out[CPULimit] = cores(cpu)
	}
	if w, err := strconv.ParseFloat(readFile(dirs[0], "cpu.weight"), 64); err == nil && w >= 1 && w != defaultWeight {
		out[CPUGuarantee] = cores(weightToCores(w))
	}
	if mem := minBytes(dirs, "memory.max", 0); mem > 0 {
		out[MemLimit] = strconv.FormatUint(mem, 10)
	}
	for _, f := range []string{"memory.min", "memory.low"} {
		if n, ok := bytesValue(readFile(dirs[0], f), 0); ok && n > 0 {
			out[MemGuarantee] = strconv.FormatUint(n, 10)
			break
		}
	}
}

// weightToCores inverts the Kubernetes conversion of CPU requests to cgroup v2 weight
// (shares = cores*1024, weight = 1 + (shares-2)*9999/262142), the usual source of a
// non-default weight. A weight step is about 0.026 cores, so the result is approximate:
// a request of 1 core (weight 39) reads back as 0.9748c.
func weightToCores(weight float64) float64 {
	shares := 2 + (weight-1)*262142/9999
	return shares / 1024
}

func readV1CPU(dirs []string, out map[string]string) {
	var cpu float64
	for _, d := range dirs {
		quota, err1 := strconv.ParseFloat(readFile(d, "cpu.cfs_quota_us"), 64)
		period, err2 := strconv.ParseFloat(readFile(d, "cpu.cfs_period_us"), 64)
		if err1 == nil && err2 == nil && quota > 0 && period > 0 && (cpu == 0 || quota/period < cpu) {
			cpu = quota / period
		}
	}
	if cpu > 0 {
		out[CPULimit] = cores(cpu)
	}
	if s, err := strconv.ParseFloat(readFile(dirs[0], "cpu.shares"), 64); err == nil && s >= 2 && s != defaultShares {
		out[CPUGuarantee] = cores(s / 1024)
	}
}

func readV1Memory(dirs []string, out map[string]string) {
	if mem := minBytes(dirs, "memory.limit_in_bytes", unlimitedV1); mem > 0 {
		out[MemLimit] = strconv.FormatUint(mem, 10)
	}
	if n, ok := bytesValue(readFile(dirs[0], "memory.soft_limit_in_bytes"), unlimitedV1); ok && n > 0 {
		out[MemGuarantee] = strconv.FormatUint(n, 10)
	}
}

// minBytes is the smallest set value of a file along dirs; 0 when none is set.
func minBytes(dirs []string, file string, unlimited uint64) uint64 {
	var least uint64
	for _, d := range dirs {
		if n, ok := bytesValue(readFile(d, file), unlimited); ok && n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	return least
}

// bytesValue parses a byte count; "max" and values from unlimited up (when not 0) are
// no value.
func bytesValue(s string, unlimited uint64) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || (unlimited > 0 && n >= unlimited) {
		return 0, false
	}
	return n, true
}

// cores writes a number of cores as instancectl did: up to 4 decimals and "c", "1.5c".
func cores(v float64) string {
	s := strconv.FormatFloat(v, 'f', 4, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "c"
}

// readFile reads a small control file, trimmed; "" when it cannot be read.
func readFile(dir, name string) string {
	data, err := readSmall(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// readSmall reads a small file whole with plain syscalls: os.ReadFile registers each
// file with the runtime's poller (cgroupfs files can be polled), five syscalls more
// for every one of the reads tend makes before its first exec.
func readSmall(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 512)
	return preadAll(fd, &buf, filepath.Dir(p), filepath.Base(p))
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
