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
//	benchctl oneshot   [flags] -- CMD...   launch -> exit of a supervisor whose one child is /bin/true
//	benchctl launch    [flags] -- CMD...   launch -> first exec of the child (-n N: of the last of N)
//	benchctl restarts  [flags] -- CMD...   restart turnaround of a child that exits 1 at once
//	benchctl run       [flags] -- CMD...   RSS, stop time, probe CPU, the soak
//	benchctl summarize -in FILE            print the Markdown table
//	benchctl curve     [flags]             tend's costs from 1 to 1000 containers (curve.go)
//	benchctl curve-report -in FILE ...     its table and the data of its chart
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
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "oneshot":
		err = cmdOneshot(os.Args[2:])
	case "launch":
		err = cmdLaunch(os.Args[2:])
	case "restarts":
		err = cmdRestarts(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "summarize":
		err = cmdSummarize(os.Args[2:])
	case "curve":
		err = cmdCurve(os.Args[2:])
	case "curve-report":
		err = cmdCurveReport(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchctl %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchctl oneshot|launch|restarts|run|summarize|curve|curve-report [flags] [-- CMD...]")
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
	var left []procInfo
	for _, d := range descendants(self) {
		if !keep[d.pid] {
			left = append(left, d)
		}
	}
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
			alive := false
			for _, d := range descendants(self) {
				alive = alive || !keep[d.pid]
			}
			if !alive && len(keep) > 0 {
				break // the kept helpers live on: wait4 would never say ECHILD
			}
			// only zombies of already-handled pids could remain; give them a moment
			time.Sleep(5 * time.Millisecond)
		}
	}
	return n
}

// keep are benchctl's own helpers (the curve's HTTP server), which reapLeftovers leaves alone.
var keep = map[int]bool{}

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
// oneshot: the whole run of `X -- /bin/true`

func cmdOneshot(args []string) error {
	fs := flag.NewFlagSet("oneshot", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 15*time.Second, "SIGKILL the tree after this")
	logPath, out, sup, scen := recordFlags(fs, "oneshot")
	argv, err := splitArgv(fs, args)
	if err != nil {
		return err
	}
	installSignals()
	c, t0, err := startChild(argv, *logPath)
	if err != nil {
		return err
	}
	rec := record{"scenario": *scen, "sup": *sup}
	var rerr error
	select {
	case <-c.done:
		rec["wall_ms"] = float64(c.exitNS-t0) / 1e6
		if c.code != 0 {
			rerr = fmt.Errorf("supervisor exited %d, not 0", c.code)
		}
	case <-time.After(*timeout):
		killTree(c.pid)
		<-c.done
		rerr = fmt.Errorf("supervisor did not exit within %v", *timeout)
	}
	if rerr != nil {
		rec["error"] = rerr.Error()
	}
	rec["exit"] = c.code
	rec["leftover"] = reapLeftovers()
	if err := appendRecord(*out, rec); err != nil {
		return err
	}
	return rerr
}

// recordFlags are the flags every measuring command shares: where the supervisor's
// output goes, where the record goes, and its labels.
func recordFlags(fs *flag.FlagSet, scenario string) (logPath, out, sup, scen *string) {
	logPath = fs.String("log", "", "supervisor stdout+stderr (default /dev/null)")
	out = fs.String("out", "", "append the JSON record here")
	sup = fs.String("sup", "", "supervisor label")
	scen = fs.String("scenario", scenario, "scenario label")
	return logPath, out, sup, scen
}

// ---------------------------------------------------------------------------
// launch: launch -> first exec of one child, or of the last of N

func cmdLaunch(args []string) error {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	stamp := fs.String("stamp", "", "file the child's stamp program writes (CLOCK_MONOTONIC ns); with -n > 1, FILE.1 ... FILE.N")
	n := fs.Int("n", 1, "number of stamp children to wait for")
	timeout := fs.Duration("timeout", 15*time.Second, "give up waiting for the stamps")
	stopTimeout := fs.Duration("stop-timeout", 20*time.Second, "SIGKILL the tree after this")
	logPath, out, sup, scen := recordFlags(fs, "exec")
	argv, err := splitArgv(fs, args)
	if err != nil {
		return err
	}
	if *stamp == "" {
		return errors.New("-stamp is required")
	}
	installSignals()

	want := map[string]bool{filepath.Base(*stamp): true}
	if *n > 1 {
		want = map[string]bool{}
		for i := 1; i <= *n; i++ {
			want[filepath.Base(*stamp)+"."+strconv.Itoa(i)] = true
		}
	}
	dir := filepath.Dir(*stamp)
	for name := range want {
		os.Remove(filepath.Join(dir, name))
	}
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return err
	}
	defer unix.Close(ifd)
	if _, err := unix.InotifyAddWatch(ifd, dir, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		return err
	}

	c, t0, err := startChild(argv, *logPath)
	if err != nil {
		return err
	}
	first, last, werr := waitStamps(ifd, dir, want, *timeout, c)
	rec := record{"scenario": *scen, "sup": *sup}
	if *n > 1 {
		rec["n"] = *n
	}
	if werr == nil {
		rec["exec_ms"] = float64(last-t0) / 1e6
		if *n > 1 {
			rec["first_exec_ms"] = float64(first-t0) / 1e6
		}
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

// waitStamps waits until every file named in want (in dir) holds a stamp and
// returns the smallest and the largest. It reads a file when inotify names it (a
// rename or a close), so waiting for 1000 stamps costs 1000 reads, not 1000 scans
// of the directory; on a queue overflow it rescans what is still missing.
func waitStamps(ifd int, dir string, want map[string]bool, timeout time.Duration, c *child) (first, last int64, err error) {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 64<<10)
	missing := len(want)
	try := func(name string) {
		if !want[name] {
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return
		}
		delete(want, name)
		missing--
		if first == 0 || v < first {
			first = v
		}
		last = max(last, v)
	}
	for name := range want { // written before the watch saw it (not the case today; cheap)
		try(name)
	}
	for missing > 0 {
		select {
		case <-c.done:
			return 0, 0, fmt.Errorf("supervisor exited (code %d) with %d of the stamps in %s missing", c.code, missing, dir)
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return 0, 0, fmt.Errorf("%d stamps missing in %s after %v", missing, dir, timeout)
		}
		pfd := []unix.PollFd{{Fd: int32(ifd), Events: unix.POLLIN}}
		_, _ = unix.Poll(pfd, int(min(left, 100*time.Millisecond)/time.Millisecond)+1)
		for {
			n, err := unix.Read(ifd, buf)
			if n <= 0 || err != nil {
				break
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
					for name := range want {
						try(name)
					}
					continue
				}
				try(strings.TrimRight(string(name), "\x00"))
			}
		}
	}
	return first, last, nil
}

// ---------------------------------------------------------------------------
// restarts: the turnaround of a crash loop

func cmdRestarts(args []string) error {
	fs := flag.NewFlagSet("restarts", flag.ContinueOnError)
	file := fs.String("file", "", "file the child (stamp -a FILE) appends \"EXEC_NS EXIT_NS\" lines to")
	skip := fs.Int("skip", 5, "restarts to leave out at the start")
	count := fs.Int("count", 50, "restarts to measure after those")
	timeout := fs.Duration("timeout", 30*time.Second, "give up waiting for the restarts")
	stopTimeout := fs.Duration("stop-timeout", 20*time.Second, "SIGKILL the tree after this")
	logPath, out, sup, scen := recordFlags(fs, "restart")
	argv, err := splitArgv(fs, args)
	if err != nil {
		return err
	}
	if *file == "" {
		return errors.New("-file is required")
	}
	installSignals()
	os.Remove(*file)
	c, _, err := startChild(argv, *logPath)
	if err != nil {
		return err
	}
	rec := record{"scenario": *scen, "sup": *sup}
	// Polling every 10 ms: 100 small reads a second disturb a 2-core machine less
	// than an inotify wake-up per restart would at pebble's pace.
	var runs [][2]int64
	deadline := time.Now().Add(*timeout)
	var werr error
	for {
		runs = readRuns(*file)
		if len(runs) > *skip+*count {
			break
		}
		if time.Now().After(deadline) {
			werr = fmt.Errorf("%d runs after %v, want %d", len(runs), *timeout, *skip+*count+1)
			break
		}
		select {
		case <-c.done:
			werr = fmt.Errorf("supervisor exited (code %d) after %d runs", c.code, len(runs))
		case <-time.After(10 * time.Millisecond):
		}
		if werr != nil {
			break
		}
	}
	d, clean := c.stop(*stopTimeout)
	if werr == nil {
		var gaps []float64
		for i := *skip + 1; i <= *skip+*count; i++ {
			gaps = append(gaps, float64(runs[i][0]-runs[i-1][1])/1e6)
		}
		rec["gap_ms"] = median(gaps)
		sort.Float64s(gaps)
		rec["gap_p90_ms"] = gaps[len(gaps)*9/10]
		rec["restarts"] = len(gaps)
	} else {
		rec["error"] = werr.Error()
	}
	rec["stop_ms"] = float64(d) / 1e6
	rec["stop_clean"] = clean
	rec["exit"] = c.code
	rec["leftover"] = reapLeftovers()
	if err := appendRecord(*out, rec); err != nil {
		return err
	}
	return werr
}

// readRuns parses the complete "EXEC_NS EXIT_NS" lines of path, in order.
func readRuns(path string) [][2]int64 {
	b, _ := os.ReadFile(path)
	var runs [][2]int64
	for _, line := range strings.SplitAfter(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasSuffix(line, "\n") {
			continue
		}
		x, err1 := strconv.ParseInt(f[0], 10, 64)
		y, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 == nil && err2 == nil {
			runs = append(runs, [2]int64{x, y})
		}
	}
	return runs
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
	gapsPort := fs.Int("gaps-port", 0, "benchhttpd port whose /gaps (per-probe arrival gaps) is read after the window")
	periodMS := fs.Float64("period-ms", 1000, "probe period, for -gaps-port")
	rssAt := fs.Duration("rss-at", 0, "also record RSS this long into the window (the soak: 1 min)")
	stopTimeout := fs.Duration("stop-timeout", 30*time.Second, "SIGKILL the tree after this")
	logPath, out, sup, scen := recordFlags(fs, "")
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
	if *gapsPort > 0 {
		if err := waitPorts(*gapsPort, *gapsPort, time.Until(deadline)+10*time.Second); err != nil {
			return fail(err)
		}
	}
	time.Sleep(*settle)
	rec["threads_start"] = threads(c.pid)

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
		var rssAtC <-chan time.Time
		if *rssAt > 0 && *rssAt < *window {
			rssAtC = time.After(*rssAt)
		}
	loop:
		for {
			select {
			case <-tick.C:
				if r, _ := vmRSSKiB(c.pid); r > maxRSS {
					maxRSS = r
				}
			case <-rssAtC:
				rec["rss_at_kib"], _ = vmRSSKiB(c.pid)
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
		if *gapsPort > 0 {
			g, err := readGaps(*gapsPort, w1-w0, *periodMS, "")
			if err != nil {
				return fail(err)
			}
			for k, v := range g {
				rec["gaps_"+k] = v
			}
			if n, _ := g["gaps"].(float64); n > 0 {
				rec["probes_per_s"] = n / secs
				rec["cpu_us_per_probe"] = cpu * 1e6 / n
				rec["gap_p99_rel"] = g["p99_ms"].(float64) / *periodMS
			}
		}
	}
	rec["threads_end"] = threads(c.pid)

	// 3. memory, restarts
	rss, hwm := vmRSSKiB(c.pid)
	rec["anon_kib"] = procStatus(c.pid)["RssAnon"]
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

	// 4. stop, and the CPU it cost the supervisor and its children
	tree := descendants(c.pid)
	before := treeCPUNS(c.pid, tree)
	d, clean := c.stop(*stopTimeout)
	rec["stop_ms"] = float64(d) / 1e6
	rec["stop_clean"] = clean
	rec["exit"] = c.code
	outlived := false // a child the supervisor did not reap (tini and dumb-init leave the sleeps)
	for _, p := range tree {
		outlived = outlived || unix.Kill(p.pid, 0) == nil
	}
	rec["leftover"] = reapLeftovers()
	if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && clean && !outlived {
		// The supervisor's rusage counts the children it reaped, whole lives: less
		// what they all had used before the signal, it is the stop's. A child it
		// did not reap would be counted before and not after: no figure then.
		after := (ru.Utime.Nano() + ru.Stime.Nano())
		rec["stop_cpu_ms"] = float64(after-before) / 1e6
	}
	return appendRecord(*out, rec)
}

// treeCPUNS is the CPU time root and its descendants tree have used so far: the
// sum_exec_runtime of every thread (/proc/PID/task/TID/schedstat), in ns.
func treeCPUNS(root int, tree []procInfo) int64 {
	pids := []int{root}
	for _, p := range tree {
		pids = append(pids, p.pid)
	}
	var sum int64
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			b, err := os.ReadFile(dir + t.Name() + "/schedstat")
			if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				sum += n
			}
		}
	}
	return sum
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

// readGaps reads benchhttpd's /gaps over the last window ns (see benchhttpd).
func readGaps(port int, window int64, periodMS float64, prefix string) (map[string]any, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d/gaps?since_ago_ms=%d&period_ms=%g&prefix=%s", port, window/1e6, periodMS, prefix)
	resp, err := httpc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var g map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %v", url, err)
	}
	return g, nil
}

// threads is the Threads: line of /proc/PID/status (-1 if unreadable).
func threads(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
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
	// pass gives the verdict on tend's median t (scaled); m(sup) is another
	// column's scaled median in the same row (NaN where it has none).
	pass func(t float64, m func(sup string) float64) string
}

// atMost: tend's median is at most x.
func atMost(x float64) func(float64, func(string) float64) string {
	return func(t float64, _ func(string) float64) string { return yesNo(t <= x) }
}

// atMostFloor is atMost for a target that the Go floor is measured against too: the
// verdict names the floor's figure, since no Go supervisor goes below it.
func atMostFloor(x float64) func(float64, func(string) float64) string {
	return func(t float64, m func(string) float64) string { return yesNo(t <= x) + floorNote(m) }
}

// floorNote is " (benchfloor F)" when the Go floor was measured in the row.
func floorNote(m func(string) float64) string {
	if f := m("benchfloor"); !math.IsNaN(f) {
		return fmt.Sprintf(" (benchfloor %.3g)", f)
	}
	return ""
}

// atMostPeer: tend's median is at most factor × peer's + plus (the targets
// are relative to peers measured in the same run).
func atMostPeer(peer string, factor, plus float64) func(float64, func(string) float64) string {
	return func(t float64, m func(string) float64) string {
		p := m(peer)
		if math.IsNaN(p) {
			return "– (no " + peer + ")"
		}
		return yesNo(t <= p*factor+plus) + fmt.Sprintf(" (%s %.3g)", peer, p*factor+plus)
	}
}

// launchTarget: target 1, at most the Go floor + 0.5 ms; the verdict also names
// benchfloor-libs, the floor with tend's libraries linked in, where it was measured:
// when that alone is above the target, no build with those libraries can meet it.
func launchTarget(t float64, m func(string) float64) string {
	v := atMostPeer("benchfloor", 1, 0.5)(t, m)
	if l := m("benchfloor-libs"); !math.IsNaN(l) {
		v = strings.TrimSuffix(v, ")") + fmt.Sprintf("; benchfloor-libs %.3g)", l)
	}
	return v
}

// startTarget: the N-services targets, at most limit ms and ≥ 3× ahead of pebble
// and process-compose (where they were measured).
func startTarget(limit float64) func(float64, func(string) float64) string {
	return func(t float64, m func(string) float64) string {
		ok := t <= limit
		for _, p := range []string{"pebble", "process-compose"} {
			if v := m(p); !math.IsNaN(v) {
				ok = ok && 3*t <= v
			}
		}
		return yesNo(ok) + floorNote(m)
	}
}

// summaryRows are the table's rows, in the order of bench/README.md, with the
// targets tend is held to.
var summaryRows = []row{
	{"one-shot `X -- /bin/true`, whole run", "oneshot", "wall_ms", 1, "ms", "%.2f", "≤ benchfloor + 0.5 ms", launchTarget},
	{"launch → first container exec", "exec", "exec_ms", 1, "ms", "%.2f", "≤ benchfloor + 0.5 ms", launchTarget},
	{"50 services: launch → last exec", "start50", "exec_ms", 1, "ms", "%.1f", "≤ 15 ms, ≥ 3× ahead", startTarget(15)},
	{"50 services: launch → first exec", "start50", "first_exec_ms", 1, "ms", "%.1f", "", nil},
	{"1000 services: launch → last exec", "start1000", "exec_ms", 1, "ms", "%.0f", "≤ 300 ms, ≥ 3× ahead", startTarget(300)},
	{"restart turnaround (exit 1 at once, no backoff): exit → next exec", "restart", "gap_ms", 1, "ms", "%.2f", "≤ pebble", atMostPeer("pebble", 1, 0)},
	{"restart turnaround, 90th percentile", "restart", "gap_p90_ms", 1, "ms", "%.2f", "", nil},
	{"supervisor anonymous memory (RssAnon), 1 `sleep`", "idle1", "anon_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor RSS, 1 `sleep`", "idle1", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor PSS, 1 `sleep`", "idle1", "pss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor anonymous memory, 50 `sleep`", "stop50", "anon_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor RSS, 50 `sleep`", "stop50", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor anonymous memory, 100 `sleep`", "idle100", "anon_kib", 1.0 / 1024, "MiB", "%.1f", "≤ 4 MiB", atMost(4)},
	{"supervisor RSS, 100 `sleep`", "idle100", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor PSS, 100 `sleep`", "idle100", "pss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"time until 100 `sleep` run", "idle100", "start_ms", 1, "ms", "%.0f", "", nil},
	{"SIGTERM → exit, 1 `sleep`", "idle1", "stop_ms", 1, "ms", "%.1f", "≤ 4 ms", atMostFloor(4)},
	{"SIGTERM → exit, 50 `sleep`", "stop50", "stop_ms", 1, "ms", "%.1f", "≤ 0.8 × process-compose", atMostPeer("process-compose", 0.8, 0)},
	{"SIGTERM → exit, 100 `sleep`", "idle100", "stop_ms", 1, "ms", "%.1f", "≤ 100 ms", atMost(100)},
	{"CPU in SIGTERM → exit, 1 `sleep` (supervisor and children)", "idle1", "stop_cpu_ms", 1, "ms", "%.1f", "", nil},
	{"CPU in SIGTERM → exit, 50 `sleep` (supervisor and children)", "stop50", "stop_cpu_ms", 1, "ms", "%.1f", "", nil},
	{"CPU in SIGTERM → exit, 100 `sleep` (supervisor and children)", "idle100", "stop_cpu_ms", 1, "ms", "%.1f", "", nil},
	{"probes actually sent per s (100 × 2 × 1/s)", "probe100", "probes_per_s", 1, "/s", "%.0f", "200", nil},
	{"supervisor CPU, 200 HTTP probes/s", "probe100", "cpu_pct", 1, "% of a core", "%.2f", "", nil},
	{"supervisor CPU per probe", "probe100", "cpu_us_per_probe", 1, "µs", "%.0f", "≤ 1.1 × go-floor-ka", atMostPeer("go-floor-ka", 1.1, 0)},
	{"supervisor RSS, max during the window", "probe100", "rss_max_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor anonymous memory at the end", "probe100", "anon_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"supervisor RSS at the end", "probe100", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"baseline: CPU with the same 100 servers, no probes", "plain100", "cpu_pct", 1, "% of a core", "%.2f", "", nil},
	{"baseline: RSS with the same 100 servers, no probes", "plain100", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"CPU per probe above the no-probe baseline", "probe100", "net_us_per_probe", 1, "µs", "%.0f", "", nil},
	{"containers restarted during the window", "probe100", "replaced", 1, "", "%.0f", "0", nil},
	{"soak: HTTP checks delivered per s (1000 × 1/s)", "soak", "probes_per_s", 1, "/s", "%.0f", "1000", nil},
	{"soak: p99 gap between checks of one probe ÷ period", "soak", "gap_p99_rel", 1, "", "%.3f", "≤ 1.05", atMost(1.05)},
	{"soak: probes late (a gap > period + 5 %) at least once", "soak", "gaps_late_paths", 1, "of 1000", "%.0f", "", nil},
	{"soak: largest gap of any probe", "soak", "gaps_max_ms", 1, "ms", "%.0f", "", nil},
	{"soak: supervisor CPU", "soak", "cpu_pct", 1, "% of a core", "%.2f", "≤ 10 %", atMost(10)},
	{"soak: supervisor CPU per check", "soak", "cpu_us_per_probe", 1, "µs", "%.0f", "", nil},
	{"soak: supervisor RSS 1 min into the window", "soak", "rss_at_kib", 1.0 / 1024, "MiB", "%.1f", "", nil},
	{"soak: supervisor anonymous memory at the end", "soak", "anon_kib", 1.0 / 1024, "MiB", "%.1f", "≤ 32 MiB", atMost(32)},
	{"soak: supervisor RSS at the end", "soak", "rss_kib", 1.0 / 1024, "MiB", "%.1f", "± 2 MiB of 1 min", nil},
	{"soak: threads at the start of the window", "soak", "threads_start", 1, "", "%.0f", "", nil},
	{"soak: threads at the end", "soak", "threads_end", 1, "", "%.0f", "no growth", nil},
	{"soak: containers restarted", "soak", "replaced", 1, "", "%.0f", "0", nil},
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
	for _, sup := range []string{"tend", "tend-base", "pebble"} {
		pc, bc, pr := vals["probe100|cpu_pct|"+sup], vals["plain100|cpu_pct|"+sup], vals["probe100|probes_per_s|"+sup]
		if len(pc) > 0 && len(bc) > 0 && len(pr) > 0 && median(pr) > 0 {
			vals["probe100|net_us_per_probe|"+sup] = []float64{(median(pc) - median(bc)) / 100 * 1e6 / median(pr)}
		}
	}
	sups := []string{"direct", "benchfloor", "benchfloor-libs", "tend", "tend-base", "tini", "dumb-init", "pebble", "process-compose", "supervisord", "go-floor", "go-floor-ka"}
	rows := summaryRows
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
		if r.pass != nil && !math.IsNaN(tendV) {
			m := func(sup string) float64 { return median(vals[r.scenario+"|"+r.metric+"|"+sup]) * r.scale }
			verdict = r.pass(tendV*r.scale, m)
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
