// Command benchrollout measures restarts without downtime (docs/reference.md
// "Restarts without downtime"): HTTP requests without keep-alive from a few clients
// without pause, through a `tend restart` every second, with the socket held by tend
// and update start_first, then stop_first, then a server that binds its port itself
// (what a restart costs without tend's sockets), beside a window without restarts.
// It prints requests per second, failed requests and the p50/p99 latency of each.
//
//	go run ./bench/cmd/benchrollout -tend bin/tend -window 30s
//
// The server is this program itself (`benchrollout serve`): it takes fd 3 (or binds
// -bind), sleeps -boot (a real application's start), sends READY=1 and serves
// `GET /`; SIGTERM stops it gracefully.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		serve(os.Args[2:])
		return
	}
	tend := flag.String("tend", "bin/tend", "the tend binary")
	window := flag.Duration("window", 30*time.Second, "how long each case runs")
	clients := flag.Int("clients", 4, "clients connecting without pause")
	boot := flag.Duration("boot", 200*time.Millisecond, "the server's start-up time")
	flag.Parse()
	fmt.Printf("%d clients, a restart every 1 s for %v, server start-up %v\n\n", *clients, *window, *boot)
	fmt.Printf("| case | requests/s | failed | p50 ms | p99 ms | p99.9 ms | max ms |\n|---|---|---|---|---|---|---|\n")
	for _, c := range []struct {
		name, update string
		held         bool
		restarts     bool
	}{
		{"no restarts (baseline)", "start_first", true, false},
		{"start_first, socket held by tend", "start_first", true, true},
		{"stop_first, socket held by tend", "stop_first", true, true},
		{"stop_first, the server binds its port", "stop_first", false, true},
	} {
		r, err := runCase(*tend, c.update, c.held, c.restarts, *boot, *window, *clients)
		if err != nil {
			fmt.Fprintln(os.Stderr, c.name+":", err)
			os.Exit(1)
		}
		fmt.Printf("| %s | %.0f | %d | %.2f | %.2f | %.1f | %.0f |\n", c.name, float64(r.ok)/window.Seconds(), r.failed,
			ms(r.pct(500)), ms(r.pct(990)), ms(r.pct(999)), ms(r.pct(1000)))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// serve is the server: fd 3 or -bind, -boot, READY=1, GET /, graceful SIGTERM.
func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	bind := fs.String("bind", "", "listen here instead of taking fd 3")
	boot := fs.Duration("boot", 0, "start-up time")
	fs.Parse(args)
	var ln net.Listener
	var err error
	if *bind != "" {
		ln, err = net.Listen("tcp", *bind)
	} else {
		ln, err = net.FileListener(os.NewFile(3, "http"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	time.Sleep(*boot)
	if addr := os.Getenv("NOTIFY_SOCKET"); addr != "" {
		if c, err := net.Dial("unixgram", "\x00"+strings.TrimPrefix(addr, "@")); err == nil {
			c.Write([]byte("READY=1"))
			c.Close()
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })}
	tl := &trackedListener{Listener: ln}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// A graceful stop: no more accepts, then every accepted connection answered.
	// Not srv.Shutdown: it closes connections accepted but not read yet (EOF).
	go func() { <-term; tl.Close() }()
	srv.Serve(tl)
	tl.conns.Wait()
}

// trackedListener counts the connections it accepted until they are closed.
type trackedListener struct {
	net.Listener
	conns sync.WaitGroup
}

func (l *trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.conns.Add(1)
	return &trackedConn{Conn: c, done: l.conns.Done}, nil
}

type trackedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.done)
	return c.Conn.Close()
}

// result is one case's requests.
type result struct {
	ok, failed int
	latencies  []time.Duration
}

// pct is the latency below which permille ‰ of the requests were answered.
func (r *result) pct(permille int) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	slices.Sort(r.latencies)
	return r.latencies[min(len(r.latencies)-1, len(r.latencies)*permille/1000)]
}

// runCase runs tend with one server and measures the clients for window.
func runCase(tend, update string, held, restarts bool, boot, window time.Duration, clients int) (*result, error) {
	dir, err := os.MkdirTemp("", "benchrollout")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd, api, err := startTend(tend, dir, serverSpec(update, held, addr, boot))
	if err != nil {
		return nil, err
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if err := waitServing(addr); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	if restarts {
		go restartEverySecond(api, stop)
	}
	r := load(addr, clients, window)
	close(stop)
	return r, nil
}

func serverSpec(update string, held bool, addr string, boot time.Duration) string {
	self, _ := os.Executable()
	argv := fmt.Sprintf("[%q, serve, -boot, %q]", self, boot.String())
	sockets := fmt.Sprintf("    sockets: [{listen: %q}]\n", addr)
	if !held {
		argv = fmt.Sprintf("[%q, serve, -boot, %q, -bind, %q]", self, boot.String(), addr)
		sockets = ""
	}
	return fmt.Sprintf("containers:\n  - name: web\n    command: %s\n%s    update: %s\n    readiness_probe: {notify: {}}\n    restart_policy: {min_period_ms: 0, max_jitter_ms: 0}\n", argv, sockets, update)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startTend runs tend on spec in dir and returns a client of its API socket.
func startTend(tend, dir, spec string) (*exec.Cmd, *http.Client, error) {
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(tend)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(abs, "run", "--log-level", "warn", path)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(dir, "tend.sock")
	api := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	return cmd, api, nil
}

func waitServing(addr string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s does not serve", addr)
}

func restartEverySecond(api *http.Client, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if os.Getenv("BENCH_DEBUG") != "" {
				fmt.Fprintln(os.Stderr, "restart:", time.Now().Format("15:04:05.000"))
			}
			if resp, err := api.Post("http://tend/v1/containers/web/restart", "", nil); err == nil {
				resp.Body.Close()
			}
		}
	}
}

// load runs clients that make requests without pause, each on a new connection.
func load(addr string, clients int, window time.Duration) *result {
	var mu sync.Mutex
	total := &result{}
	end := time.Now().Add(window)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			r := result{}
			for time.Now().Before(end) {
				t0 := time.Now()
				resp, err := c.Get("http://" + addr + "/")
				if err == nil {
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					if os.Getenv("BENCH_DEBUG") != "" {
						fmt.Fprintln(os.Stderr, "failed:", time.Now().Format("15:04:05.000"), err)
					}
					r.failed++
					continue
				}
				r.ok++
				r.latencies = append(r.latencies, time.Since(t0))
			}
			mu.Lock()
			total.ok, total.failed = total.ok+r.ok, total.failed+r.failed
			total.latencies = append(total.latencies, r.latencies...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}
