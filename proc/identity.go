package proc

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/spec"
)

// A process with rlimits, or in a cgroup v1 group, starts through an exec shim:
// syscall.ForkExec cannot set limits or join a v1 cgroup between fork and exec, and
// doing either to the child afterwards (prlimit, a write of its pid) would let the
// program start, and fork, outside them. The shim is tend itself (/proc/self/exe)
// with shimArg0 as argv[0]: it joins the cgroup, sets the limits, drops to the user,
// changes to the working directory and execve's the program. Other processes never
// pay for it (docs/reference.md "Identity and limits" has the cost).
const shimArg0 = "tend-exec-shim"

// Its argv: shimArg0, cgroup.procs files ("\n"-separated: /proc/self/cgroup is
// line-based, so no cgroup path holds a newline), credentials ("" or
// UID:GID:G1,G2), limits (RES=SOFT:HARD,...), working directory, program path, then
// the program's argv.
const shimArgs = 6

func init() {
	// In init, not main: the shim is done before the rest of tend initialises
	// (only proc's dependencies have), which keeps its cost to the Go runtime's start.
	if len(os.Args) > shimArgs && os.Args[0] == shimArg0 {
		runShim(os.Args)
	}
}

// placed fills attr for a process running as id in cg and returns the path and argv
// to fork/exec: the program itself, or the shim when there are limits to set or a
// v1 cgroup to join.
func placed(id *spec.Identity, cg *Cgroup, path string, argv []string, attr *syscall.ProcAttr) (string, []string) {
	var procs []string
	if cg != nil {
		if cg.FD >= 0 {
			attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, cg.FD
		}
		procs = cg.ProcsFiles
	}
	if len(procs) == 0 && (id == nil || len(id.Rlimits) == 0) && !wantsListenPID(attr.Env) {
		if id != nil {
			attr.Sys.Credential = credential(id)
		}
		return path, argv
	}
	creds, limits := "", []string{}
	if id != nil && id.HasUser {
		groups := make([]string, len(id.Groups))
		for i, g := range id.Groups {
			groups[i] = strconv.FormatUint(uint64(g), 10)
		}
		creds = fmt.Sprintf("%d:%d:%s", id.UID, id.GID, strings.Join(groups, ","))
	}
	if id != nil {
		for _, l := range id.Rlimits {
			limits = append(limits, fmt.Sprintf("%d=%d:%d", l.Resource, l.Soft, l.Hard))
		}
	}
	shim := append([]string{shimArg0, strings.Join(procs, "\n"), creds, strings.Join(limits, ","), attr.Dir, path}, argv...)
	attr.Dir = "" // the shim changes to it as the user, as ForkExec would
	return shimPath, shim
}

// shimPath is how tend runs itself as the shim.
const shimPath = "/proc/self/exe"

// checkExecutable reports a program given by a path (lookPath leaves those to execve)
// that does not exist or cannot be executed, relative to dir, as fork/exec would.
func checkExecutable(path, dir string) error {
	if !strings.Contains(path, "/") {
		return nil // found in PATH by lookPath
	}
	p := path
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	if err := syscall.Access(p, unix.X_OK); err != nil {
		return &fs.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return nil
}

func credential(id *spec.Identity) *syscall.Credential {
	if !id.HasUser {
		return nil
	}
	// Groups empty (not nil) still clears tend's supplementary groups.
	return &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: append([]uint32{}, id.Groups...)}
}

// runShim is the shim's whole life; it never returns. A failure is written to the
// process's stderr (its container's output) and exits 126, or 127 when the program
// is not there, as a shell would.
func runShim(args []string) {
	procs, creds, limits, dir, path, argv := args[1], args[2], args[3], args[4], args[5], args[6:]
	if procs != "" {
		// First, as root: cgroup.procs is root's to write, and the limits and the
		// user apply inside the cgroup.
		pid := []byte(strconv.Itoa(os.Getpid()))
		for f := range strings.SplitSeq(procs, "\n") {
			if err := os.WriteFile(f, pid, 0); err != nil {
				shimFail(126, "join cgroup: %v", err)
			}
		}
	}
	shimLimits(limits)
	if creds != "" {
		shimCredentials(creds)
	}
	if dir != "" {
		if err := syscall.Chdir(dir); err != nil {
			shimFail(126, "working directory %s: %v", dir, err)
		}
	}
	err := syscall.Exec(path, argv, withListenPID(os.Environ()))
	code := 126
	if err == syscall.ENOENT {
		code = 127
	}
	shimFail(code, "exec %s: %v", path, err)
}

// shimLimits sets the rlimits of limits ("RESOURCE=SOFT:HARD,...").
func shimLimits(limits string) {
	for l := range strings.SplitSeq(limits, ",") {
		if l == "" {
			continue
		}
		var res int
		var lim syscall.Rlimit
		if _, err := fmt.Sscanf(l, "%d=%d:%d", &res, &lim.Cur, &lim.Max); err != nil {
			shimFail(126, "bad limit %q", l)
		}
		// syscall.Setrlimit (not x/sys): for RLIMIT_NOFILE it also stops syscall.Exec
		// from restoring the soft limit the Go runtime raised at start.
		if err := syscall.Setrlimit(res, &lim); err != nil {
			shimFail(126, "set rlimit %s: %v", spec.RlimitName(res), err)
		}
	}
}

// shimCredentials becomes the user of creds ("UID:GID:GID,GID...").
func shimCredentials(creds string) {
	var uid, gid int
	var groups string
	parts := strings.SplitN(creds, ":", 3)
	uid, _ = strconv.Atoi(parts[0])
	gid, _ = strconv.Atoi(parts[1])
	groups = parts[2]
	gids := []int{}
	for g := range strings.SplitSeq(groups, ",") {
		if n, err := strconv.Atoi(g); err == nil {
			gids = append(gids, n)
		}
	}
	// The Go runtime applies these to every thread of the shim.
	if err := syscall.Setgroups(gids); err != nil {
		shimFail(126, "setgroups: %v", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		shimFail(126, "setgid %d: %v", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		shimFail(126, "setuid %d: %v", uid, err)
	}
}

func shimFail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "tend: cannot start: "+format+"\n", args...)
	os.Exit(code)
}
