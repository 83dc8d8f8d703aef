//go:build soak

package tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// TestSoak is `make soak` (not part of `make test`): for SOAK_DURATION (default 3m) a
// flood of idle API connections, a container crashing every 10 ms and a storm of
// reloads run together against one tend, while a TCP-probed container must stay
// untouched (SOAK_FLOOD=0 leaves the flood out). It prints tend's FDs, RSS and goroutines at the start and the end.
func TestSoak(t *testing.T) {
	d := 3 * time.Minute
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("SOAK_DURATION: %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	webPort, apiPort := freePort(t), freePort(t)
	specText := func(extra bool) string {
		s := fmt.Sprintf(`
containers:
  - name: web
    command: [%q, web, "{DIR}/events", "%d"]
    env: [{name: STOP_TEST_HELPER, value: http-server}]
    liveness_probe:
      tcp_socket: {port: %d}
      time_limit: {initial_delay_ms: 200, min_restart_period_ms: 200, max_restart_period_ms: 200}
  - name: crash
    command: ["sh", "-c", "exit 1"]
    restart_policy: {min_period_ms: 10, max_period_ms: 10, max_jitter_ms: 0}
`, self, webPort, webPort)
		if extra {
			s += "  - {name: extra, command: [sleep, 600]}\n"
		}
		return s
	}
	tp := start(t, specText(false), runOpts{discard: true, args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort)}})
	pid := tp.pid()
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running
	})
	time.Sleep(2 * time.Second) // settle (tend lowers GOMAXPROCS and GOGC after 2 s)
	begin := sample(t, tp, pid)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var floodOpen, reloads atomic.Int64
	// The flood: idle connections with half a request line, reopened as tend drops them.
	floodWorkers := 4
	if os.Getenv("SOAK_FLOOD") == "0" {
		floodWorkers = 0
	}
	for w := 0; w < floodWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", apiPort), time.Second)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				c.Write([]byte("GET /v1/status HTTP/1.1\r\nHost: x\r\n"))
				conns = append(conns, c)
				floodOpen.Add(1)
				if len(conns) >= 1500 {
					conns[0].Close()
					conns = conns[1:]
				}
			}
		}()
	}
	// The reload storm: unchanged specs, and every tenth one adds or removes a container.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%10 == 0 {
				os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(strings.ReplaceAll(specText(i%20 == 0), "{DIR}", tp.dir)), 0o644)
			}
			if resp, err := tp.client().Post("http://tend/v1/reload", "", nil); err == nil {
				resp.Body.Close()
				reloads.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	// /v1/live on the unix socket answers quickly all along.
	deadline := time.Now().Add(d)
	var slowest time.Duration
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		t0 := time.Now()
		resp, err := tp.client().Get("http://tend/v1/live")
		took := time.Since(t0)
		if err != nil {
			t.Errorf("/v1/live on the unix socket: %v", err)
			continue
		}
		resp.Body.Close()
		slowest = max(slowest, took)
	}
	close(stop)
	wg.Wait()
	time.Sleep(2 * time.Second) // let the dropped connections close
	end := sample(t, tp, pid)
	doc, _ := tp.status()
	web := containerStatus(doc, "web")
	report := fmt.Sprintf("soak %v: %d flood connections, %d reloads, crash restarts %d, web restarts %d, slowest /v1/live %v\n"+
		"          FDs   RSS KiB  goroutines\nstart  %6d  %8d  %10d\nend    %6d  %8d  %10d\n",
		d, floodOpen.Load(), reloads.Load(), containerStatus(doc, "crash").Restarts, web.Restarts, slowest.Round(time.Millisecond),
		begin.fds, begin.rssKiB, begin.goroutines, end.fds, end.rssKiB, end.goroutines)
	fmt.Print(report)
	if web.Restarts != 0 || web.Alive.Status != "True" {
		t.Errorf("the probed container was touched: %+v", web)
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("/v1/live on the unix socket took %v at worst, want under 100 ms", slowest)
	}
	if end.fds > begin.fds+20 || end.goroutines > begin.goroutines+20 {
		t.Errorf("FDs or goroutines grew:\n%s", report)
	}
}

type soakSample struct{ fds, rssKiB, goroutines int }

func sample(t *testing.T, tp *tend, pid int) soakSample {
	t.Helper()
	var s soakSample
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = len(ents)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				s.rssKiB, _ = strconv.Atoi(f[1])
			}
		}
	}
	resp, err := tp.client().Get("http://tend/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			s.goroutines, _ = strconv.Atoi(v)
		}
	}
	return s
}

// TestSoakAPIAbuse is `make soak`'s slow-client and follower case: for SOAK_ABUSE_DURATION
// (default 1m) 8 containers print 60 KB lines while 500 token-holding TCP clients ask
// for their logs (half follow) and never read, new ones coming as tend drops them, 40
// `logs -f` hold the unix socket and 256 TCP clients announce bodies they never send.
// Every second `tend status --ready` must exit 0 and /v1/live over TCP answer within
// 2 s. It prints tend's peak RSS, FDs and goroutines and how the health checks fared.
func TestSoakAPIAbuse(t *testing.T) {
	d := time.Minute
	if v := os.Getenv("SOAK_ABUSE_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("SOAK_ABUSE_DURATION: %v", err)
		}
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	apiAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var b strings.Builder
	b.WriteString("containers:\n")
	for i := range 8 {
		fmt.Fprintf(&b, "  - name: c%d\n    command: [\"sh\", \"-c\", \"l=$(head -c 61440 /dev/zero | tr '\\\\0' x); while :; do echo $l; sleep 0.05; done\"]\n", i)
	}
	tp := start(t, b.String(), runOpts{discard: true,
		args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", apiAddr, "--api-token-file", tokenFile}})
	pid := tp.pid()
	tp.waitStatus(10*time.Second, "all ready", func(d status.Document) bool { return d.Ready.True() })
	time.Sleep(2 * time.Second) // settle (tend lowers GOMAXPROCS and GOGC after 2 s)
	begin := sample(t, tp, pid)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var logClients atomic.Int64
	wg.Add(1)
	go func() { // the non-reading log clients, reopened as tend drops them
		defer wg.Done()
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			c, err := net.DialTimeout("tcp", apiAddr, time.Second)
			if err != nil {
				continue
			}
			fmt.Fprintf(c, "GET /v1/logs?lines=100&follow=%t HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\r\n", i%2 == 1)
			conns = append(conns, c)
			logClients.Add(1)
			if len(conns) > 500 {
				conns[0].Close()
				conns = conns[1:]
			}
		}
	}()
	held := dialAll(t, "unix", tp.sock, 40, "GET /v1/logs?follow=true HTTP/1.1\r\nHost: x\r\n\r\n")
	held = append(held, dialAll(t, "tcp", apiAddr, 256, "GET /v1/live HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")...)

	var checks, readyFailed, liveFailed int
	var slowestLive time.Duration
	maxFDs := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		checks++
		maxFDs = max(maxFDs, openFDs(pid))
		if _, _, code := runCLI(t, tp.dir, "status", "--ready", "--listen", "unix:"+tp.sock); code != 0 {
			readyFailed++
		}
		t0 := time.Now()
		if code, _, err := getWithin(tcpClient(), "http://"+apiAddr+"/v1/live", 2*time.Second); err != nil || code != http.StatusOK {
			liveFailed++
		}
		slowestLive = max(slowestLive, time.Since(t0))
	}
	peak := peakRSS(t, pid)
	close(stop)
	wg.Wait()
	for _, c := range held {
		c.Close()
	}
	time.Sleep(12 * time.Second) // the write and read timeouts (10 s) drop what is left
	end := sample(t, tp, pid)
	report := fmt.Sprintf("soak API abuse %v: %d non-reading log clients, 40 unix followers, 256 stalled bodies; peak RSS %d KiB, FDs at most %d\n"+
		"health checks %d: status --ready failed %d, /v1/live over TCP failed %d (slowest %v)\n"+
		"          FDs   RSS KiB  goroutines\nstart  %6d  %8d  %10d\nend    %6d  %8d  %10d\n",
		d, logClients.Load(), peak>>10, maxFDs, checks, readyFailed, liveFailed, slowestLive.Round(time.Millisecond),
		begin.fds, begin.rssKiB, begin.goroutines, end.fds, end.rssKiB, end.goroutines)
	fmt.Print(report)
	if readyFailed > 0 || liveFailed > 0 {
		t.Errorf("health checks failed under abuse:\n%s", report)
	}
	if peak > 200<<20 {
		t.Errorf("peak RSS %d MiB, want under 200:\n%s", peak>>20, report)
	}
	if end.fds > begin.fds+20 || end.goroutines > begin.goroutines+20 {
		t.Errorf("FDs or goroutines grew:\n%s", report)
	}
}
