// Command demo is what the example instance of examples/kubernetes runs, in an image
// that has no shell: a web server with health endpoints and a /shutdown stop handler,
// a worker that finishes its work on SIGTERM, and (for make e2e) a spawner of
// orphans. Every event is one line with its time in Unix milliseconds (at_ms), so
// that the order of a shutdown can be read from tend's output.
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
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "web":
		web(args)
	case "worker":
		worker(args)
	case "orphans":
		orphans(args)
	case "alloc":
		alloc(args)
	case "sleep":
		d, err := time.ParseDuration(argOr(args, "1s"))
		if err != nil {
			fatal(err)
		}
		time.Sleep(d)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: demo web [--port N] [--drain DUR]
       demo worker [--every DUR]
       demo orphans [--count N] [--linger DUR]
       demo alloc [--mb N]
       demo sleep DUR`)
	os.Exit(2)
}

// event prints one timed line: "at_ms=1764000000123 event=NAME k=v...".
func event(name string, kv ...any) {
	line := fmt.Sprintf("at_ms=%d event=%s", time.Now().UnixMilli(), name)
	for i := 0; i+1 < len(kv); i += 2 {
		line += fmt.Sprintf(" %v=%v", kv[i], kv[i+1])
	}
	fmt.Println(line)
}

// web serves /healthz (liveness), /ready (readiness, 503 while draining) and
// /shutdown (the stop handler: drain, then exit 0). SIGTERM exits at once.
func web(args []string) {
	fs := flag.NewFlagSet("web", flag.ExitOnError)
	port := fs.Int("port", 8081, "port to listen on (all addresses)")
	drain := fs.Duration("drain", 300*time.Millisecond, "time from GET /shutdown to the exit")
	fs.Parse(args)
	var draining atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ready")
	})
	mux.HandleFunc("/shutdown", func(w http.ResponseWriter, _ *http.Request) {
		if !draining.Swap(true) {
			event("draining")
			go func() {
				time.Sleep(*drain) // stands in for finishing the requests in flight
				event("drained")
				os.Exit(0)
			}()
		}
		fmt.Fprint(w, "ok")
	})
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(*port))
	if err != nil {
		fatal(err)
	}
	go exitOnTerm("web")
	event("listening", "port", *port)
	fatal(http.Serve(ln, mux))
}

// worker prints a tick every --every; on SIGTERM it finishes the tick in hand and
// exits 0.
func worker(args []string) {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	every := fs.Duration("every", 5*time.Second, "time between ticks")
	fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	event("working")
	t := time.NewTicker(*every)
	for n := 1; ; n++ {
		select {
		case <-t.C:
			event("tick", "n", n)
		case <-ctx.Done():
			event("SIGTERM")
			event("finished")
			return
		}
	}
}

// orphans starts --count children in sessions of their own that each live for
// --linger, and exits without waiting for them: they become orphans of tend, which
// must reap them.
func orphans(args []string) {
	fs := flag.NewFlagSet("orphans", flag.ExitOnError)
	count := fs.Int("count", 10, "children to leave behind")
	linger := fs.Duration("linger", time.Second, "how long each child lives")
	fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	for range *count {
		cmd := exec.Command(self, "sleep", linger.String())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // out of the container's process group
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
	}
	event("spawned", "count", *count)
}

// alloc takes --mb MiB of memory, a MiB at a time, touching every page, then waits:
// under a smaller memory limit the kernel's OOM killer ends it (make e2e).
func alloc(args []string) {
	fs := flag.NewFlagSet("alloc", flag.ExitOnError)
	mb := fs.Int("mb", 200, "MiB to allocate")
	fs.Parse(args)
	var kept [][]byte
	for i := range *mb {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		kept = append(kept, b)
	}
	event("allocated", "mb", len(kept))
	time.Sleep(time.Hour)
}

func exitOnTerm(name string) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	event("SIGTERM", "in", name)
	os.Exit(0)
}

func argOr(args []string, def string) string {
	if len(args) > 0 {
		return args[0]
	}
	return def
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "demo:", err)
	os.Exit(1)
}
