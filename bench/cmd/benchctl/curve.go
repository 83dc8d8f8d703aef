package main

// benchctl curve: how tend's costs grow from 1 to 1000 containers (bench/curve.sh).
//
// For each N and each mode (sleepers; sleepers each with an HTTP readiness check every
// second against one benchhttpd), one tend runs in a fresh cgroup of its own (every v1
// hierarchy tend uses, and the cgroup2 one of a hybrid host), with `cgroups: auto` by
// default. Measured: launch -> the last container's exec (the containers are stamp
// children, which write the time of their exec and pause), anonymous memory (RssAnon),
// RSS, PSS and the memory charge of tend's group less that of the groups below it, CPU
// over a window, the latency of GET /v1/status and /metrics, the checks' p99 lateness,
// and SIGTERM -> exit. The charge is tend's alone only where its containers are in
// memory groups of their own: on a hybrid host a container joins a v1 memory group only
// for a memory limit, so without limits (and with cgroups off) their kernel memory
// (task, stacks, page tables) is charged to tend's group too.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type curveConfig struct {
	tend, stamp, httpd string
	port               int
	window, settle     time.Duration
	cgroups            string
	viewer             bool
	out                string
}

func cmdCurve(args []string) error {
	fs := flag.NewFlagSet("curve", flag.ContinueOnError)
	var cfg curveConfig
	fs.StringVar(&cfg.tend, "tend", "bin/tend", "the tend binary")
	fs.StringVar(&cfg.stamp, "stamp", "", "the stamp program (the containers)")
	fs.StringVar(&cfg.httpd, "httpd", "", "benchhttpd (the checks' server)")
	fs.IntVar(&cfg.port, "port", 31000, "the checks' server port")
	ns := fs.String("n", "1,10,100,1000", "container counts")
	modes := fs.String("modes", "sleep,checks", "sleep: idle containers; checks: each with an HTTP readiness check every second")
	fs.DurationVar(&cfg.window, "window", 15*time.Second, "CPU window")
	fs.DurationVar(&cfg.settle, "settle", 4*time.Second, "wait after the last exec (and the first check of every container) before measuring")
	fs.StringVar(&cfg.cgroups, "cgroups", "auto", "instance.cgroups of the spec")
	fs.BoolVar(&cfg.viewer, "viewer", true, "also measure tend's CPU with `tend top` attached, where the binary has it")
	fs.StringVar(&cfg.out, "out", "", "append one JSON record per run here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.stamp == "" || cfg.httpd == "" {
		return errors.New("-stamp and -httpd are required")
	}
	installSignals()
	var counts []int
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-n: %q is not a count", s)
		}
		counts = append(counts, n)
	}
	if cfg.viewer {
		cfg.viewer = exec.Command(cfg.tend, "top", "--help").Run() == nil
	}
	// The one server of every check, started once.
	srv := exec.Command(cfg.httpd, strconv.Itoa(cfg.port))
	srv.SysProcAttr = &unix.SysProcAttr{Setpgid: true, Pdeathsig: unix.SIGKILL}
	if err := srv.Start(); err != nil {
		return err
	}
	keep[srv.Process.Pid] = true
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	if err := waitPorts(cfg.port, cfg.port, 10*time.Second); err != nil {
		return err
	}
	run := 0
	for _, mode := range strings.Split(*modes, ",") {
		for _, n := range counts {
			run++
			rec := curveRun(cfg, n, mode, run)
			if err := appendRecord(cfg.out, rec); err != nil {
				return err
			}
			if e, ok := rec["error"]; ok {
				fmt.Fprintf(os.Stderr, "benchctl curve: %d containers, %s: %v\n", n, mode, e)
			}
		}
	}
	return nil
}

// curveRun is one tend with n containers in mode; errors are in the record.
func curveRun(cfg curveConfig, n int, mode string, run int) record {
	rec := record{"scenario": "curve", "sup": "tend", "n": n, "mode": mode, "cgroups": cfg.cgroups}
	fail := func(err error) record { rec["error"] = err.Error(); return rec }
	dir, err := os.MkdirTemp("", "tend-curve.")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	stamps := filepath.Join(dir, "s")
	if err := os.Mkdir(stamps, 0o755); err != nil {
		return fail(err)
	}
	prefix := fmt.Sprintf("/p/r%d-", run)
	if err := writeCurveSpec(cfg, dir, stamps, n, mode, prefix); err != nil {
		return fail(err)
	}
	cg, err := newBenchCgroup(fmt.Sprintf("tend-curve-%d-%d", os.Getpid(), run))
	if err != nil {
		return fail(err)
	}
	defer cg.remove()

	want := map[string]bool{}
	for i := 1; i <= n; i++ {
		want["stamp."+strconv.Itoa(i)] = true
	}
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(ifd)
	if _, err := unix.InotifyAddWatch(ifd, stamps, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		return fail(err)
	}
	// tend starts in its group: benchctl joins it for the fork and leaves it at once.
	var c *child
	var t0 int64
	err = cg.while(func() error {
		var err error
		c, t0, err = startChild([]string{cfg.tend, "run", "--log-format", "json", "--log-level", "warn", filepath.Join(dir, "spec.yaml")},
			filepath.Join(dir, "tend.log"))
		return err
	})
	if err != nil {
		return fail(err)
	}
	stop := func() {
		d, clean := c.stop(60 * time.Second)
		rec["stop_ms"] = float64(d) / 1e6
		rec["stop_clean"] = clean
		rec["exit"] = c.code
		rec["leftover"] = reapLeftovers()
	}
	failRunning := func(err error) record {
		stop()
		if b, _ := os.ReadFile(filepath.Join(dir, "tend.log")); len(b) > 0 {
			err = fmt.Errorf("%v; tend's log: %s", err, lastLine(b))
		}
		return fail(err)
	}
	_, last, err := waitStamps(ifd, stamps, want, 120*time.Second, c)
	if err != nil {
		return failRunning(err)
	}
	rec["exec_ms"] = float64(last-t0) / 1e6
	if mode == "checks" {
		if err := waitPaths(cfg.port, n, prefix, 60*time.Second); err != nil {
			return failRunning(err)
		}
	}
	time.Sleep(cfg.settle)

	memory(rec, c.pid, cg)
	s0, err := readStat(c.pid)
	if err != nil {
		return failRunning(err)
	}
	w0 := monoNS()
	time.Sleep(cfg.window)
	s1, err := readStat(c.pid)
	if err != nil {
		return failRunning(err)
	}
	secs := float64(monoNS()-w0) / 1e9
	rec["cpu_pct"] = float64((s1.utime+s1.stime)-(s0.utime+s0.stime)) / clkTck / secs * 100
	if mode == "checks" {
		g, err := readGaps(cfg.port, int64(cfg.window), 1000, prefix)
		if err != nil {
			return failRunning(err)
		}
		if p99, ok := g["p99_ms"].(float64); ok && p99 > 0 {
			rec["late_p99_pct"] = (p99/1000 - 1) * 100
		}
		rec["gaps_max_ms"] = g["max_ms"]
		rec["gaps"] = g["gaps"]
	}
	memory(rec, c.pid, cg) // again after the window: the figure is the larger
	sock := filepath.Join(dir, "tend.sock")
	for _, p := range []string{"/v1/status", "/metrics"} {
		med, p99, err := apiLatency(sock, p, 30)
		if err != nil {
			return failRunning(err)
		}
		key := strings.Trim(strings.ReplaceAll(p, "/v1", ""), "/")
		rec[key+"_ms"], rec[key+"_p99_ms"] = med, p99
	}
	if cfg.viewer && mode == "sleep" {
		if err := viewerCPU(rec, cfg, c.pid, sock); err != nil {
			return failRunning(err)
		}
	}
	rec["threads"] = threads(c.pid)
	stop()
	return rec
}

// writeCurveSpec writes dir/spec.yaml: n stamp containers, each (mode checks) with an
// HTTP readiness check of its own path every second.
func writeCurveSpec(cfg curveConfig, dir, stamps string, n int, mode, prefix string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "instance: {dir: %q, cgroups: %s}\ncontainers:\n", dir, cfg.cgroups)
	tl := "time_limit: {initial_delay_ms: 1000, min_restart_period_ms: 1000, max_restart_period_ms: 1000, max_execution_time_ms: 1000}"
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - name: c%d\n    command: [%q, %q]\n", i, cfg.stamp, filepath.Join(stamps, "stamp."+strconv.Itoa(i)))
		if mode == "checks" {
			fmt.Fprintf(&b, "    readiness_probe: {http_get: {port: %d, path: %sc%d}, %s}\n", cfg.port, prefix, i, tl)
		} else if mode != "sleep" {
			return fmt.Errorf("mode %q: sleep or checks", mode)
		}
	}
	return os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(b.String()), 0o644)
}

// waitPaths waits until the server has seen a check of each of the n paths of prefix.
func waitPaths(port, n int, prefix string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := httpc.Get(fmt.Sprintf("http://127.0.0.1:%d/gaps?since_ago_ms=600000&prefix=%s", port, prefix))
		if err == nil {
			var g struct{ Paths, Prefixed int }
			err = json.NewDecoder(resp.Body).Decode(&g)
			resp.Body.Close()
			if err == nil && g.Prefixed >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the checks of %d containers did not all reach the server within %v", n, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// memory records tend's anonymous memory, RSS, PSS and its group's own charge, each the
// largest seen so far.
func memory(rec record, pid int, cg *benchCgroup) {
	most := func(k string, v int64) {
		if old, ok := rec[k].(int64); !ok || v > old {
			rec[k] = v
		}
	}
	st := procStatus(pid)
	most("anon_kib", st["RssAnon"])
	most("rss_kib", st["VmRSS"])
	most("pss_kib", pssKiB(pid))
	if own, ok := cg.ownCharge(); ok {
		most("cg_own_kib", own>>10)
	}
}

// procStatus is the kB figures of /proc/PID/status by name.
func procStatus(pid int) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				out[strings.TrimSuffix(f[0], ":")] = v
			}
		}
	}
	return out
}

// apiLatency is the median and the 99th percentile (the largest, under 100 requests) of
// count GETs of path over the unix socket, each on a new connection as a `tend status` makes.
func apiLatency(sock, path string, count int) (med, p99 float64, err error) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	var ms []float64
	for i := 0; i < count; i++ {
		t := time.Now()
		resp, err := hc.Get("http://tend" + path)
		if err != nil {
			return 0, 0, fmt.Errorf("GET %s: %v", path, err)
		}
		_, err = bufio.NewReader(resp.Body).WriteTo(discard{})
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return 0, 0, fmt.Errorf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		ms = append(ms, float64(time.Since(t))/1e6)
	}
	sort.Float64s(ms)
	return median(ms), ms[min(len(ms)-1, int(math.Ceil(0.99*float64(len(ms))))-1)], nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// viewerCPU records tend's CPU over the window with `tend top` attached (in a
// pseudo-terminal made by script(1)).
func viewerCPU(rec record, cfg curveConfig, pid int, sock string) error {
	v := exec.Command("script", "-qfec", fmt.Sprintf("%q top --listen unix:%s", cfg.tend, sock), "/dev/null")
	v.Env = append(os.Environ(), "TERM=xterm", "COLUMNS=120", "LINES=40")
	v.SysProcAttr = &unix.SysProcAttr{Setpgid: true, Pdeathsig: unix.SIGKILL}
	if err := v.Start(); err != nil {
		return fmt.Errorf("tend top: %v", err)
	}
	defer func() { _ = unix.Kill(-v.Process.Pid, unix.SIGKILL); _ = v.Wait() }()
	time.Sleep(2 * time.Second)
	s0, err := readStat(pid)
	if err != nil {
		return err
	}
	w0 := monoNS()
	time.Sleep(cfg.window)
	s1, err := readStat(pid)
	if err != nil {
		return err
	}
	rec["viewer_cpu_pct"] = float64((s1.utime+s1.stime)-(s0.utime+s0.stime)) / clkTck / (float64(monoNS()-w0) / 1e9) * 100
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// ---------------------------------------------------------------------------
// the cgroup of one tend under measurement

// benchCgroup is a fresh group below benchctl's own in every v1 hierarchy tend uses
// and in the cgroup2 one of a hybrid host (as tests/cgroup_harness_test.go makes one).
type benchCgroup struct {
	dirs   []string // created, in /proc/self/cgroup's order
	own    []string // benchctl's own group in each, to go back to
	memory string   // the memory hierarchy's directory ("" if none)
}

func newBenchCgroup(name string) (*benchCgroup, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	cg := &benchCgroup{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mount string
		switch parts[1] {
		case "":
			if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err != nil {
				continue
			}
			mount = "/sys/fs/cgroup/unified"
		case "cpu,cpuacct", "cpuacct,cpu", "cpu", "cpuacct", "memory", "pids", "freezer":
			mount = "/sys/fs/cgroup/" + parts[1]
		default:
			continue
		}
		own := filepath.Join(mount, parts[2])
		dir := filepath.Join(own, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			return nil, fmt.Errorf("bench cgroup: %v (run as root on a cgroup v1 or hybrid host)", err)
		}
		cg.dirs, cg.own = append(cg.dirs, dir), append(cg.own, own)
		if parts[1] == "memory" {
			cg.memory = dir
		}
	}
	if cg.memory == "" {
		cg.remove()
		return nil, errors.New("no cgroup v1 memory hierarchy: the curve needs one for tend's charge")
	}
	return cg, nil
}

// while runs f with benchctl in the group (a child forked by f starts there).
func (cg *benchCgroup) while(f func() error) error {
	self := []byte(strconv.Itoa(os.Getpid()))
	back := func() {
		for _, d := range cg.own {
			_ = os.WriteFile(filepath.Join(d, "cgroup.procs"), self, 0)
		}
	}
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), self, 0); err != nil {
			back()
			return fmt.Errorf("join %s: %v", d, err)
		}
	}
	err := f()
	back()
	return err
}

// ownCharge is memory.usage_in_bytes of tend's group less that of the memory groups
// below it (those tend makes for containers with a memory limit).
func (cg *benchCgroup) ownCharge() (int64, bool) {
	usage := func(d string) (int64, bool) {
		b, err := os.ReadFile(filepath.Join(d, "memory.usage_in_bytes"))
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil
	}
	total, ok := usage(cg.memory)
	if !ok {
		return 0, false
	}
	ents, _ := os.ReadDir(cg.memory)
	for _, e := range ents {
		if e.IsDir() {
			if v, ok := usage(filepath.Join(cg.memory, e.Name())); ok {
				total -= v
			}
		}
	}
	return total, true
}

// remove kills whatever is left in the groups and removes them, deepest first.
func (cg *benchCgroup) remove() {
	for _, d := range cg.dirs {
		for try := 0; try < 100; try++ {
			var all []string
			_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
				if err == nil && e.IsDir() {
					all = append(all, p)
				}
				return nil
			})
			if len(all) == 0 {
				break
			}
			for i := len(all) - 1; i >= 0; i-- {
				if b, err := os.ReadFile(filepath.Join(all[i], "cgroup.procs")); err == nil {
					for _, f := range strings.Fields(string(b)) {
						if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
							_ = unix.Kill(pid, unix.SIGKILL)
						}
					}
				}
				_ = unix.Rmdir(all[i])
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := os.Stat(d); err == nil {
			fmt.Fprintf(os.Stderr, "benchctl curve: cannot remove %s\n", d)
		}
	}
}
