// Command benchhttpd is the container of the probe benchmarks (bench/run.sh,
// scenario 4 and the soak): a minimal HTTP server on one or more ports, on every
// address (IPv4 and IPv6, so that "localhost" resolves either way).
//
//   - GET / answers 200 "ok" and counts the request; GET /count answers the number
//     of requests to / so far, which lets the harness count probes independently of
//     the supervisor that sends them.
//   - GET /p/NAME answers 200 "ok" and records the arrival time (CLOCK_MONOTONIC) of
//     the request under NAME: the soak gives every probe its own path, so the gaps
//     between consecutive checks of one probe are measured on the server side.
//   - GET /gaps?since_ago_ms=W&period_ms=P answers JSON: percentiles of the gaps between
//     consecutive arrivals on each /p/ path (the first of the two within the last W ms), in ms,
//     pooled over all paths, and the worst path's largest gap; also how many paths
//     were seen and how many of them were late (a gap over period + 5 %) at least once.
//     With prefix=/p/X only the paths that begin so count ("prefixed": how many).
//
// usage: benchhttpd PORT[-PORT] [PORT[-PORT]...]
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// arrivals holds, per /p/ path, the arrival times of its requests.
type arrivals struct {
	mu    sync.Mutex
	paths map[string][]int64
}

var start = time.Now()

// mono is nanoseconds on the monotonic clock (time.Since reads it).
func mono() int64 { return int64(time.Since(start)) }

func (a *arrivals) record(path string) {
	t := mono()
	a.mu.Lock()
	a.paths[path] = append(a.paths[path], t)
	a.mu.Unlock()
}

// gaps answers /gaps: the window is given as "the last W ms" so that the caller
// needs no access to the server's clock.
func (a *arrivals) gaps(w http.ResponseWriter, r *http.Request) {
	since, _ := strconv.ParseInt(r.URL.Query().Get("since_ago_ms"), 10, 64)
	period, _ := strconv.ParseFloat(r.URL.Query().Get("period_ms"), 64)
	prefix := r.URL.Query().Get("prefix")
	from := mono() - since*1e6
	var all []float64
	worst, late, prefixed := 0.0, 0, 0
	a.mu.Lock()
	for path, ts := range a.paths {
		if !strings.HasPrefix(path, prefix) {
			continue
		}
		prefixed++
		lateHere := false
		for i := 1; i < len(ts); i++ {
			if ts[i-1] < from {
				continue
			}
			g := float64(ts[i]-ts[i-1]) / 1e6
			all = append(all, g)
			worst = max(worst, g)
			lateHere = lateHere || (period > 0 && g > period*1.05)
		}
		if lateHere {
			late++
		}
	}
	n := len(a.paths)
	a.mu.Unlock()
	sort.Float64s(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))]
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"paths": n, "prefixed": prefixed, "gaps": len(all), "late_paths": late, "max_ms": worst,
		"p50_ms": pct(0.50), "p99_ms": pct(0.99), "p999_ms": pct(0.999),
	})
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchhttpd PORT[-PORT]...")
		os.Exit(2)
	}
	var ports []int
	for _, a := range os.Args[1:] {
		from, to, ok := strings.Cut(a, "-")
		lo, err1 := strconv.Atoi(from)
		hi, err2 := lo, error(nil)
		if ok {
			hi, err2 = strconv.Atoi(to)
		}
		if err1 != nil || err2 != nil || lo <= 0 || hi > 65535 || hi < lo {
			fmt.Fprintf(os.Stderr, "benchhttpd: bad port %q\n", a)
			os.Exit(2)
		}
		for p := lo; p <= hi; p++ {
			ports = append(ports, p)
		}
	}
	// A hundred of these run at once: keep each one small.
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(50)

	var served atomic.Uint64
	arr := &arrivals{paths: map[string][]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/count", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d\n", served.Load())
	})
	mux.HandleFunc("/gaps", arr.gaps)
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		arr.record(r.URL.Path)
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		_, _ = w.Write([]byte("ok"))
	})
	errs := make(chan error, len(ports))
	for _, p := range ports {
		go func() { errs <- http.ListenAndServe(":"+strconv.Itoa(p), mux) }()
	}
	fmt.Fprintf(os.Stderr, "benchhttpd: %v\n", <-errs)
	os.Exit(1)
}
