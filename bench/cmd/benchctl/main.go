// Command benchctl is the measuring side of bench/run.sh: it starts one supervisor
// (tend, tini, pebble, supervisord, ...) as its child, measures it, stops it and
// appends one JSON record per run to a results file; `summarize` turns the records
// into the Markdown table of bench/README.md.
//
// benchctl is a child subreaper, so whatever a supervisor leaves behind when it exits
// is reparented to benchctl, counted ("leftover") and SIGKILLed: a run can never
// leak processes, also when benchctl itself is interrupted (SIGINT/SIGTERM kill the
// supervisor and every descendant).
//
//	benchctl launch    [flags] -- CMD...   scenario 1: launch -> first exec of the child
//	benchctl run       [flags] -- CMD...   scenarios 2-4: RSS, stop time, probe CPU
//	benchctl summarize -in FILE [-quick]   print the Markdown table
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "launch":
		err = cmdLaunch(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "summarize":
		err = cmdSummarize(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchctl %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchctl launch|run|summarize [flags] [-- CMD...]")
	os.Exit(2)
}

// monoNS is CLOCK_MONOTONIC in nanoseconds, the clock the stamp child reads.
func monoNS() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// record is one measured run; absent metrics are omitted.
type record map[string]any

func appendRecord(path string, r record) error {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			r["load1"], _ = strconv.ParseFloat(f[0], 64)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

// ---------------------------------------------------------------------------
// the supervised child

type child struct {
	cmd    *exec.Cmd
	pid    int
	done   chan struct{} // closed when the supervisor has exited
	exitNS int64         // CLOCK_MONOTONIC at the return of wait
	code   int
}

var (
	current   *child
	currentMu sync.Mutex
)

// startChild starts argv in its own process group with stdout and stderr to logPath.
func startChild(argv []string, logPath string) (*child, int64, error) {
	if logPath == "" {
		logPath = os.DevNull
	}
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf // *os.File: no copying goroutine delays Wait
	// Own process group; SIGKILL if benchctl dies without cleaning up (the supervisor's
	// containers are then reparented and killed by the next benchctl or run.sh's trap).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &child{cmd: cmd, done: make(chan struct{})}
	t0 := monoNS()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	c.pid = cmd.Process.Pid
	currentMu.Lock()
	current = c
	currentMu.Unlock()
	go func() {
		err := cmd.Wait()
		c.exitNS = monoNS()
		c.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				c.code = 128 + int(ws.Signal())
			} else {
				c.code = ee.ExitCode()
			}
		} else if err != nil {
			c.code = -1
		}
		logf.Close()
		close(c.done)
	}()
	return c, t0, nil
}

// stop sends SIGTERM to the supervisor only (as a container runtime does to PID 1)
// and waits for its exit; after timeout the whole tree is SIGKILLed. It returns the
// time from the signal to the supervisor's exit.
func (c *child) stop(timeout time.Duration) (time.Duration, bool) {
	select {
	case <-c.done:
		return 0, false
	default:
	}
	t := monoNS()
	_ = unix.Kill(c.pid, unix.SIGTERM)
	select {
	case <-c.done:
		return time.Duration(c.exitNS - t), true
	case <-time.After(timeout):
		killTree(c.pid)
		<-c.done
		return time.Duration(c.exitNS - t), false
	}
}

// ---------------------------------------------------------------------------
// /proc

type procInfo struct {
	pid, ppid int
	comm      string
	state     byte
	utime     uint64
	stime     uint64
}

func readStat(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	s := string(b)
	l, r := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if l < 0 || r < l || r+2 >= len(s) {
		return procInfo{}, fmt.Errorf("bad stat for %d", pid)
	}
	f := strings.Fields(s[r+2:])
	// f[0]=state f[1]=ppid ... f[11]=utime f[12]=stime
	if len(f) < 13 {
		return procInfo{}, fmt.Errorf("short stat for %d", pid)
	}
	p := procInfo{pid: pid, comm: s[l+1 : r], state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.utime, _ = strconv.ParseUint(f[11], 10, 64)
	p.stime, _ = strconv.ParseUint(f[12], 10, 64)
	return p, nil
}

func allProcs() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procInfo, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readStat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// descendants of root (not root itself), living ones only.
func descendants(root int) []procInfo {
	ps := allProcs()
	kids := map[int][]procInfo{}
	for _, p := range ps {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	var out []procInfo
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			if k.state != 'Z' {
				out = append(out, k)
			}
			queue = append(queue, k.pid)
		}
	}
	return out
}

func countComm(ps []procInfo, comm string) (n int, pids map[int]bool) {
	pids = map[int]bool{}
	for _, p := range ps {
		if p.comm == comm {
			n++
			pids[p.pid] = true
		}
	}
	return n, pids
}

// killTree SIGKILLs root, its process group and every descendant.
func killTree(root int) {
	ds := descendants(root)
	_ = unix.Kill(-root, unix.SIGKILL)
	_ = unix.Kill(root, unix.SIGKILL)
	for _, d := range ds {
		_ = unix.Kill(-d.pid, unix.SIGKILL)
		_ = unix.Kill(d.pid, unix.SIGKILL)
	}
}

// reapLeftovers counts the living processes that were reparented to benchctl (the
// subreaper) after the supervisor exited, kills them with their descendants and reaps
// every zombie child. It does not touch the supervisor child (already reaped).
func reapLeftovers() int {
	self := os.Getpid()
	left := descendants(self)
	n := 0
	for _, d := range left {
		if d.ppid == self {
			n++
		}
	}
	for _, d := range left {
		_ = unix.Kill(d.pid, unix.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err != nil { // ECHILD: nothing left
			break
		}
		if pid == 0 {
			if len(descendants(self)) == 0 {
				// only zombies of already-handled pids could remain; give them a moment
				time.Sleep(5 * time.Millisecond)
				continue
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return n
}

func vmRSSKiB(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss, _ = strconv.ParseInt(f[1], 10, 64)
		}
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return rss, hwm
}

func pssKiB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "Pss:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return -1
}

// clkTck is USER_HZ; 100 on every Linux architecture Go supports.
const clkTck = 100

// installSignals makes SIGINT/SIGTERM/SIGHUP to benchctl kill the supervisor tree.
func installSignals() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-ch
		currentMu.Lock()
		c := current
		currentMu.Unlock()
		if c != nil {
			killTree(c.pid)
		}
		reapLeftovers()
		fmt.Fprintf(os.Stderr, "benchctl: interrupted by %v, killed the supervisor tree\n", s)
		os.Exit(1)
	}()
}

func splitArgv(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return nil, errors.New("missing -- CMD")
	}
	return argv, nil
}

// ---------------------------------------------------------------------------
// launch: scenario 1

func cmdLaunch(args []string) error {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	stamp := fs.String("stamp", "", "file the child's stamp program writes (CLOCK_MONOTONIC ns)")
	timeout := fs.Duration("timeout", 15*time.Second, "give up waiting for the stamp")
	stopTimeout := fs.Duration("stop-timeout", 20*time.Second, "SIGKILL the tree after this")
	logPath := fs.String("log", "", "supervisor stdout+stderr (default /dev/null)")
	out := fs.String("out", "", "append the JSON record here")
	sup := fs.String("sup", "", "supervisor label")
	scen := fs.String("scenario", "exec", "scenario label")
	argv, err := splitArgv(fs, args)
	if err != nil {
		return err
	}
	if *stamp == "" {
		return errors.New("-stamp is required")
	}
	installSignals()

	dir := filepath.Dir(*stamp)
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return err
	}
	defer unix.Close(ifd)
	if _, err := unix.InotifyAddWatch(ifd, dir, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		return err
	}
	os.Remove(*stamp)

	c, t0, err := startChild(argv, *logPath)
	if err != nil {
		return err
	}
	stampNS, werr := waitStamp(ifd, *stamp, *timeout, c)
	rec := record{"scenario": *scen, "sup": *sup}
	if werr == nil {
		rec["exec_ms"] = float64(stampNS-t0) / 1e6
	} else {
		rec["error"] = werr.Error()
	}
	// Let the child settle before stopping, so stop does not race with start-up.
	time.Sleep(50 * time.Millisecond)
	d, clean := c.stop(*stopTimeout)
	rec["stop_ms"] = float64(d) / 1e6
	rec["stop_clean"] = clean
	rec["exit"] = c.code
	rec["leftover"] = reapLeftovers()
	if err := appendRecord(*out, rec); err != nil {
		return err
	}
	return werr
}

func waitStamp(ifd int, path string, timeout time.Duration, c *child) (int64, error) {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 4096)
	for {
		if b, err := os.ReadFile(path); err == nil {
			v, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if perr == nil {
				return v, nil
			}
		}
		select {
		case <-c.done:
			return 0, fmt.Errorf("supervisor exited (code %d) before the child wrote %s", c.code, path)
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return 0, fmt.Errorf("no stamp in %s after %v", path, timeout)
		}
		ms := int(left / time.Millisecond)
		if ms > 100 {
			ms = 100
		}
		pfd := []unix.PollFd{{Fd: int32(ifd), Events: unix.POLLIN}}
		_, _ = unix.Poll(pfd, ms)
		for { // drain the events; which one it was does not matter
			n, err := unix.Read(ifd, buf)
			if n <= 0 || err != nil {
				break
			}
		}
	}
}

// ---------------------------------------------------------------------------
// run: scenarios 2-4

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	comm := fs.String("comm", "sleep", "comm of the containers to wait for")
	n := fs.Int("n", 1, "number of containers to wait for")
	startTimeout := fs.Duration("start-timeout", 60*time.Second, "give up waiting for the containers")
	settle := fs.Duration("settle", 2*time.Second, "wait this long after all started before measuring")
	window := fs.Duration("window", 0, "CPU measurement window (0: none)")
	ports := fs.String("ports", "", "FROM-TO: benchhttpd ports whose /count is read around the window")
	stopTimeout := fs.Duration("stop-timeout", 30*time.Second, "SIGKILL the tree after this")
	logPath := fs.String("log", "", "supervisor stdout+stderr (default /dev/null)")
	out := fs.String("out", "", "append the JSON record here")
	sup := fs.String("sup", "", "supervisor label")
	scen := fs.String("scenario", "", "scenario label")
	argv, err := splitArgv(fs, args)
	if err != nil {
		return err
	}
	var pFrom, pTo int
	if *ports != "" {
		if _, err := fmt.Sscanf(*ports, "%d-%d", &pFrom, &pTo); err != nil {
			return fmt.Errorf("-ports %q: %v", *ports, err)
		}
	}
	installSignals()
	for p := pFrom; pTo > 0 && p <= pTo; p++ {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			return fmt.Errorf("port %d is not free: %v", p, err)
		}
		l.Close()
	}

	c, t0, err := startChild(argv, *logPath)
	if err != nil {
		return err
	}
	rec := record{"scenario": *scen, "sup": *sup, "n": *n}
	fail := func(e error) error {
		rec["error"] = e.Error()
		killTree(c.pid)
		<-c.done
		rec["exit"] = c.code
		rec["leftover"] = reapLeftovers()
		_ = appendRecord(*out, rec)
		return e
	}

	// 1. wait for every container
	deadline := time.Now().Add(*startTimeout)
	var pids map[int]bool
	for {
		var cnt int
		cnt, pids = countComm(descendants(c.pid), *comm)
		if cnt >= *n {
			break
		}
		select {
		case <-c.done:
			return fail(fmt.Errorf("supervisor exited (code %d) with %d/%d %s running", c.code, cnt, *n, *comm))
		default:
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("only %d/%d %s after %v", cnt, *n, *comm, *startTimeout))
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec["start_ms"] = float64(monoNS()-t0) / 1e6
	if pTo > 0 {
		if err := waitPorts(pFrom, pTo, time.Until(deadline)+10*time.Second); err != nil {
			return fail(err)
		}
	}
	time.Sleep(*settle)

	// 2. the CPU window
	if *window > 0 {
		var c0 []uint64
		if pTo > 0 {
			if c0, err = readCounts(pFrom, pTo); err != nil {
				return fail(err)
			}
		}
		s0, err := readStat(c.pid)
		if err != nil {
			return fail(err)
		}
		w0 := monoNS()
		var maxRSS int64
		tick := time.NewTicker(time.Second)
		end := time.After(*window)
	loop:
		for {
			select {
			case <-tick.C:
				if r, _ := vmRSSKiB(c.pid); r > maxRSS {
					maxRSS = r
				}
			case <-end:
				break loop
			case <-c.done:
				tick.Stop()
				return fail(fmt.Errorf("supervisor exited (code %d) during the window", c.code))
			}
		}
		tick.Stop()
		s1, err := readStat(c.pid)
		if err != nil {
			return fail(err)
		}
		w1 := monoNS()
		secs := float64(w1-w0) / 1e9
		cpu := float64((s1.utime+s1.stime)-(s0.utime+s0.stime)) / clkTck
		rec["window_s"] = secs
		rec["cpu_s"] = cpu
		rec["cpu_pct"] = cpu / secs * 100
		rec["rss_max_kib"] = maxRSS
		if pTo > 0 {
			c1, err := readCounts(pFrom, pTo)
			if err != nil {
				return fail(err)
			}
			var probes uint64
			for i := range c1 {
				probes += c1[i] - c0[i]
			}
			rec["probes"] = probes
			rec["probes_per_s"] = float64(probes) / secs
			if probes > 0 {
				rec["cpu_us_per_probe"] = cpu * 1e6 / float64(probes)
			}
		}
	}

	// 3. memory, restarts
	rss, hwm := vmRSSKiB(c.pid)
	rec["rss_kib"] = rss
	rec["hwm_kib"] = hwm
	rec["pss_kib"] = pssKiB(c.pid)
	cnt, now := countComm(descendants(c.pid), *comm)
	changed := 0
	for p := range pids {
		if !now[p] {
			changed++
		}
	}
	rec["running"] = cnt
	rec["replaced"] = changed // containers whose pid changed: restarts during the measurement

	// 4. stop
	d, clean := c.stop(*stopTimeout)
	rec["stop_ms"] = float64(d) / 1e6
	rec["stop_clean"] = clean
	rec["exit"] = c.code
	rec["leftover"] = reapLeftovers()
	return appendRecord(*out, rec)
}

var httpc = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func readCount(port int) (uint64, error) {
	resp, err := httpc.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/count")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

func readCounts(from, to int) ([]uint64, error) {
	out := make([]uint64, 0, to-from+1)
	for p := from; p <= to; p++ {
		v, err := readCount(p)
		if err != nil {
			return nil, fmt.Errorf("port %d: %v", p, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func waitPorts(from, to int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for p := from; p <= to; p++ {
		for {
			if _, err := readCount(p); err == nil {
				break
			} else if time.Now().After(deadline) {
				return fmt.Errorf("port %d does not answer: %v", p, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// summarize

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type row struct {
	title    string
	scenario string
	metric   string
	scale    float64 // value * scale
	unit     string
	format   string
	target   string
	pass     func(tend float64) bool
}

func cmdSummarize(args []string) error {
	fs := flag.NewFlagSet("summarize", flag.ContinueOnError)
	in := fs.String("in", "", "results file (JSON lines)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	vals := map[string][]float64{} // scenario|metric|sup
	errs := map[string][]string{}  // scenario|sup
	count := map[string]int{}      // scenario|sup
	maxOf := map[string]float64{}  // scenario|metric|sup
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		s, _ := r["scenario"].(string)
		sup, _ := r["sup"].(string)
		count[s+"|"+sup]++
		if e, ok := r["error"].(string); ok {
			errs[s+"|"+sup] = append(errs[s+"|"+sup], e)
		}
		for k, v := range r {
			if x, ok := v.(float64); ok {
				key := s + "|" + k + "|" + sup
				vals[key] = append(vals[key], x)
				if len(vals[key]) == 1 || x > maxOf[key] {
					maxOf[key] = x
				}
			}
			if b, ok := v.(bool); ok && k == "stop_clean" && !b {
				key := s + "|stop_unclean|" + sup
				vals[key] = append(vals[key], 1)
			}
		}
	}
	// Net CPU per probe: (median CPU with probes - median CPU without) / median probe rate.
	for _, sup := range []string{"tend", "pebble"} {
		pc, bc, pr := vals["probe100|cpu_pct|"+sup], vals["plain100|cpu_pct|"+sup], vals["probe100|probes_per_s|"+sup]
		if len(pc) > 0 && len(bc) > 0 && len(pr) > 0 && median(pr) > 0 {
			vals["probe100|net_us_per_probe|"+sup] = []float64{(median(pc) - median(bc)) / 100 * 1e6 / median(pr)}
		}
	}
	sups := []string{"direct", "tend", "tend-base", "tini", "pebble", "supervisord", "go-floor", "go-floor-ka"}
	rows := []row{
		{"1. launch → first container exec", "exec", "exec_ms", 1, "ms", "%.2f", "≤ 5 ms", func(t float64) bool { return t <= 5 }},
		{"2. supervisor RSS, 1 `sleep`", "idle1", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
		{"2. supervisor PSS, 1 `sleep`", "idle1", "pss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
		{"2. supervisor RSS, 100 `sleep`", "idle100", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "≤ 12 MiB", func(t float64) bool { return t <= 12 }},
		{"2. supervisor PSS, 100 `sleep`", "idle100", "pss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
		{"2. time until 100 `sleep` run", "idle100", "start_ms", 1, "ms", "%.0f", "", nil},
		{"3. SIGTERM → exit, 1 `sleep`", "idle1", "stop_ms", 1, "ms", "%.1f", "", nil},
		{"3. SIGTERM → exit, 100 `sleep`", "idle100", "stop_ms", 1, "ms", "%.1f", "≤ 100 ms", func(t float64) bool { return t <= 100 }},
		{"4. probes actually sent per s (100 × 2 × 1/s)", "probe100", "probes_per_s", 1, "/s", "%.0f", "200", nil},
		{"4. supervisor CPU, 200 HTTP probes/s", "probe100", "cpu_pct", 1, "% of a core", "%.2f", "≤ 2 %", func(t float64) bool { return t <= 2 }},
		{"4. supervisor CPU per probe", "probe100", "cpu_us_per_probe", 1, "µs", "%.0f", "peer ≥ 3× tend", nil},
		{"4. supervisor RSS, max during the window", "probe100", "rss_max_kib", 1.0 / 1024, "MiB", "%.1f", "≤ 16 MiB", func(t float64) bool { return t <= 16 }},
		{"4. supervisor RSS at the end", "probe100", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
		{"4. baseline: CPU with the same 100 servers, no probes", "plain100", "cpu_pct", 1, "% of a core", "%.2f", "", nil},
		{"4. baseline: RSS with the same 100 servers, no probes", "plain100", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
		{"4. CPU per probe above the no-probe baseline", "probe100", "net_us_per_probe", 1, "µs", "%.0f", "", nil},
		{"4. containers restarted during the window", "probe100", "replaced", 1, "", "%.0f", "0", nil},
	}
	// Columns: only supervisors with at least one record.
	var cols []string
	for _, s := range sups {
		for k := range count {
			if strings.HasSuffix(k, "|"+s) {
				cols = append(cols, s)
				break
			}
		}
	}
	var b strings.Builder
	b.WriteString("| scenario (median) | unit |")
	for _, s := range cols {
		b.WriteString(" " + s + " |")
	}
	b.WriteString(" target | tend meets it |\n|---|---|")
	for range cols {
		b.WriteString("---:|")
	}
	b.WriteString("---|---|\n")
	for _, r := range rows {
		tk := r.scenario + "|" + r.metric + "|tend"
		tendV := median(vals[tk])
		hasData := false
		for _, s := range cols {
			hasData = hasData || len(vals[r.scenario+"|"+r.metric+"|"+s]) > 0
		}
		if !hasData {
			continue
		}
		b.WriteString("| " + r.title + " | " + r.unit + " |")
		for _, s := range cols {
			v := vals[r.scenario+"|"+r.metric+"|"+s]
			if len(v) == 0 {
				b.WriteString(" – |")
				continue
			}
			m := median(v) * r.scale
			cell := fmt.Sprintf(r.format, m)
			if s != "tend" && s != "direct" && !math.IsNaN(tendV) && tendV > 0 && r.metric != "probes_per_s" && r.metric != "replaced" {
				cell += fmt.Sprintf(" (×%.1f)", median(v)/tendV)
			}
			if r.metric != "net_us_per_probe" {
				cell += fmt.Sprintf(" <sub>n=%d</sub>", len(v))
			}
			b.WriteString(" " + cell + " |")
		}
		verdict := ""
		switch {
		case r.metric == "cpu_us_per_probe":
			if pv := median(vals[r.scenario+"|"+r.metric+"|pebble"]); !math.IsNaN(pv) && !math.IsNaN(tendV) {
				verdict = yesNo(pv >= 3*tendV) + fmt.Sprintf(" (pebble ÷ tend = %.1f)", pv/tendV)
			}
		case r.pass != nil && !math.IsNaN(tendV):
			verdict = yesNo(r.pass(tendV * r.scale))
		}
		b.WriteString(" " + r.target + " | " + verdict + " |\n")
	}
	fmt.Print(b.String())
	// Failures, unclean stops and leftovers, if any.
	var notes []string
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := strings.SplitN(k, "|", 2)
		if e := errs[k]; len(e) > 0 {
			notes = append(notes, fmt.Sprintf("- %s/%s: %d of %d runs failed: %s", p[1], p[0], len(e), count[k], e[0]))
		}
		if v := vals[p[0]+"|stop_unclean|"+p[1]]; len(v) > 0 {
			notes = append(notes, fmt.Sprintf("- %s/%s: %d of %d runs did not exit within the stop timeout (SIGKILLed)", p[1], p[0], len(v), count[k]))
		}
		if lv := vals[p[0]+"|leftover|"+p[1]]; len(lv) > 0 {
			if m := maxOf[p[0]+"|leftover|"+p[1]]; m > 0 {
				notes = append(notes, fmt.Sprintf("- %s/%s: up to %.0f processes were left running after the supervisor exited", p[1], p[0], m))
			}
		}
	}
	var loads []float64
	for k, v := range vals {
		if strings.Contains(k, "|load1|") {
			loads = append(loads, v...)
		}
	}
	if len(loads) > 0 {
		sort.Float64s(loads)
		fmt.Printf("\nLoad average (1 min) seen at the end of the runs: min %.2f, median %.2f, max %.2f.\n", loads[0], median(loads), loads[len(loads)-1])
	}
	if len(notes) > 0 {
		fmt.Print("\nProblems seen in this run:\n\n" + strings.Join(notes, "\n") + "\n")
	}
	return nil
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
