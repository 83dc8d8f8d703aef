// Command benchhttpd is the container of the probe-cost benchmark (bench/run.sh,
// scenario 4): a minimal HTTP server on one port, on every address (IPv4 and IPv6,
// so that "localhost" resolves either way). GET / answers 200 "ok" and counts the
// request; GET /count answers the number of requests to / so far, which lets the
// harness count probes independently of the supervisor that sends them.
//
// usage: benchhttpd PORT
package main

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchhttpd PORT")
		os.Exit(2)
	}
	port, err := strconv.Atoi(os.Args[1])
	if err != nil || port <= 0 || port > 65535 {
		fmt.Fprintf(os.Stderr, "benchhttpd: bad port %q\n", os.Args[1])
		os.Exit(2)
	}
	// A hundred of these run at once: keep each one small.
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(50)

	var served atomic.Uint64
	mux := http.NewServeMux()
	mux.HandleFunc("/count", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d\n", served.Load())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		_, _ = w.Write([]byte("ok"))
	})
	if err := http.ListenAndServe(":"+strconv.Itoa(port), mux); err != nil {
		fmt.Fprintf(os.Stderr, "benchhttpd: %v\n", err)
		os.Exit(1)
	}
}
