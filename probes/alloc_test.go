package probes

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// cannedServer answers every read on a connection with answer, allocating nothing
// per request itself, so that a benchmark's allocations are the client's.
func cannedServer(t testing.TB, answer string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	wire := []byte(answer)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write(wire); err != nil {
						return
					}
				}
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// A probe's check on its kept connection allocates nothing: at 200 checks a second
// any garbage keeps the collector running, and the heap at its goal, for nothing
// else (bench/README.md in its git history, series 9).
func TestKeptCheckAllocatesNothing(t *testing.T) {
	for _, answer := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
	} {
		port := cannedServer(t, answer)
		h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/"}}
		var kept session
		ctx, cancel := context.WithCancel(context.Background())
		if r := check(ctx, h, Target{}, time.Second, &kept, probeCheck); !r.OK {
			t.Fatal(r.Detail)
		}
		allocs := leastAllocs(func() {
			if r := check(ctx, h, Target{}, time.Second, &kept, probeCheck); !r.OK {
				t.Fatal(r.Detail)
			}
		})
		kept.close()
		cancel()
		if allocs > 0 {
			t.Errorf("%q: a kept check allocates %.1f times, want none", answer[:12], allocs)
		}
	}
}

// leastAllocs is the least of three testing.AllocsPerRun(200, f): it counts every
// allocation of the process, and under load another goroutine's land in one of them
// now and then (about once in 600 under two busy loops beside `go test -race`); an
// f that allocates does in each.
func leastAllocs(f func()) float64 {
	least := testing.AllocsPerRun(200, f)
	for i := 0; i < 2 && least > 0; i++ {
		least = min(least, testing.AllocsPerRun(200, f))
	}
	return least
}

// The client's share of a kept check (compare BenchmarkHTTPKeptCheck, whose
// net/http server allocates for every request).
func BenchmarkHTTPKeptCheckClient(b *testing.B) {
	port := cannedServer(b, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/"}}
	var kept session
	defer kept.close()
	b.ReportAllocs()
	for b.Loop() {
		if r := check(context.Background(), h, Target{}, time.Second, &kept, probeCheck); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}
