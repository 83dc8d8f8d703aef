package api

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/promtext"
	"github.com/tend-sh/tend/status"
)

// processStart stands for the start of tend's process: package variables are set
// before main runs.
var processStart = time.Now()

// writeProcessMetrics writes tend's own footprint under the names of Prometheus'
// standard process collector. It reads /proc/self/stat and /proc/self/fd only, not
// the Go runtime's statistics (a stop-the-world read on every scrape).
func writeProcessMetrics(w io.Writer) {
	if st, ok := readSelfStat(); ok {
		promtext.Family(w, "process_cpu_seconds_total", "counter", "User and system CPU time tend has used, in seconds.")
		promtext.Float(w, "process_cpu_seconds_total", float64(st.utime+st.stime)/userHZ)
		promtext.Family(w, "process_resident_memory_bytes", "gauge", "Resident memory size of tend in bytes.")
		promtext.Uint(w, "process_resident_memory_bytes", st.rssPages*uint64(os.Getpagesize()))
		promtext.Family(w, "process_virtual_memory_bytes", "gauge", "Virtual memory size of tend in bytes.")
		promtext.Uint(w, "process_virtual_memory_bytes", st.vsizeBytes)
	}
	if n, err := openFDs(); err == nil {
		promtext.Family(w, "process_open_fds", "gauge", "File descriptors tend has open.")
		promtext.Uint(w, "process_open_fds", n)
	}
	var nofile unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile) == nil {
		promtext.Family(w, "process_max_fds", "gauge", "Limit on the file descriptors tend may open (RLIMIT_NOFILE).")
		promtext.Uint(w, "process_max_fds", nofile.Cur)
	}
	promtext.Family(w, "process_start_time_seconds", "gauge", "Start time of tend since the Unix epoch, in seconds.")
	promtext.Float(w, "process_start_time_seconds", float64(processStart.UnixMilli())/1000)
	promtext.Family(w, "go_goroutines", "gauge", "Goroutines in tend.")
	promtext.Uint(w, "go_goroutines", uint64(runtime.NumGoroutine()))
}

// selfProcess is tend's own process for the status document: its pid, start, CPU
// time and resident set, from /proc/self/stat read at most once in selfEvery (a
// dozen tend top viewers read the status each second; the read was 8 % of each).
func selfProcess() *status.Process {
	self.mu.Lock()
	defer self.mu.Unlock()
	if now := time.Now(); now.Sub(self.at) >= selfEvery {
		self.at = now
		self.p = status.Process{Pid: os.Getpid(), StartedAt: status.At(processStart)}
		if st, ok := readSelfStat(); ok {
			self.p.CPUSeconds = float64(st.utime+st.stime) / userHZ
			self.p.MemoryBytes = int64(st.rssPages) * int64(os.Getpagesize())
		}
	}
	p := self.p
	return &p
}

// selfEvery is how old the CPU time and memory of selfProcess may be: a tick of
// /proc's CPU time is 10 ms anyway.
const selfEvery = 250 * time.Millisecond

var self struct {
	mu sync.Mutex
	at time.Time
	p  status.Process
}

// userHZ is the unit of the CPU times in /proc/PID/stat: fixed at 100 for user space.
const userHZ = 100

type selfStat struct {
	utime, stime, vsizeBytes, rssPages uint64
}

// readSelfStat reads tend's CPU times and memory sizes from /proc/self/stat (proc(5)).
func readSelfStat() (selfStat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return selfStat{}, false
	}
	// The command name in parentheses may contain spaces: fields are counted after it,
	// from field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return selfStat{}, false
	}
	fields := bytes.Fields(b[i+1:])
	field := func(n int) uint64 { // proc(5) numbers fields from 1
		if n-3 >= len(fields) {
			return 0
		}
		v, _ := strconv.ParseUint(string(fields[n-3]), 10, 64)
		return v
	}
	return selfStat{utime: field(14), stime: field(15), vsizeBytes: field(23), rssPages: field(24)}, len(fields) > 24-3
}

// openFDs counts the entries of /proc/self/fd (the directory's own one included).
func openFDs() (uint64, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	var n uint64
	for {
		names, err := d.Readdirnames(256)
		n += uint64(len(names))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
