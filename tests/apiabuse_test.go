package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// dialAll opens n connections to addr on network and writes req on each; they are
// closed when the test ends.
func dialAll(t *testing.T, network, addr string, n int, req string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout(network, addr, 2*time.Second)
		if err != nil {
			t.Fatalf("connection %d to %s: %v", len(conns), addr, err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	return conns
}

// getWithin is GET url by a fresh client that gives up after timeout.
func getWithin(client *http.Client, url string, timeout time.Duration) (int, string, error) {
	client.Timeout = timeout
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func tcpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// Clients that announce a body and never send it hold no TCP connection for good:
// with every connection of the TCP listener (256) held by `GET /v1/live` with
// `Content-Length: 10` and nothing after, a fresh /v1/live still answers within 2 s
// (the connection that waited longest for its client is closed to make room), and
// after the read timeout (10 s) tend has closed them all. Before, they held their
// slots for good and /v1/live over TCP timed out.
func TestAPIStalledBodiesDoNotHoldTCP(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	apiAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	tp := start(t, `
containers:
  - name: app
    command: ["sleep", "600"]
`, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", apiAddr}})
	tp.waitStatus(10*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	pid := tp.pid()
	before := openFDs(pid)
	const stalled = 256 // the TCP listener's cap
	conns := dialAll(t, "tcp", apiAddr, stalled, "GET /v1/live HTTP/1.1\r\nHost: tend\r\nContent-Length: 10\r\n\r\n")
	waitFor(t, 10*time.Second, "tend holding the stalled connections", func() (bool, string) {
		n := openFDs(pid) - before
		return n >= stalled, fmt.Sprintf("%d more descriptors", n)
	})
	for i := range 5 {
		began := time.Now()
		code, body, err := getWithin(tcpClient(), "http://"+apiAddr+"/v1/live", 2*time.Second)
		if err != nil || code != http.StatusOK || body != "live" {
			t.Fatalf("/v1/live over TCP #%d with %d stalled clients: %d %q %v", i, stalled, code, body, err)
		}
		t.Logf("/v1/live over TCP #%d answered in %v", i, time.Since(began).Round(time.Millisecond))
	}
	// The rest are closed once they have waited the read timeout for their body.
	deadline := time.Now().Add(15 * time.Second)
	for i, c := range conns {
		c.SetReadDeadline(deadline)
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("stalled connection %d still open 15 s on: %v", i, err)
		}
	}
}

// Log followers cannot lock the health check out: 40 `GET /v1/logs?follow=true` on
// the unix socket (more than its 32 connections) get at most half of them, the rest
// are told 503 at once; `tend status --ready` (the documented HEALTHCHECK) still
// exits 0 and /v1/live over TCP answers. Before, 32 followers held every connection
// of the socket and `tend status --ready` exited 2.
func TestLogFollowersLeaveRoomForHealthChecks(t *testing.T) {
	apiAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "while :; do echo tick; sleep 0.1; done"]
`, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", apiAddr}})
	tp.waitStatus(10*time.Second, "app ready", func(d status.Document) bool { return d.Ready.True() })
	const followers = 40
	conns := dialAll(t, "unix", tp.sock, followers, "GET /v1/logs?follow=true HTTP/1.1\r\nHost: tend\r\n\r\n")
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			code := 0
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				code = resp.StatusCode
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("answers to %d followers: %v (0: none within 5 s)", followers, codes)
	if codes[http.StatusOK] < 8 || codes[http.StatusOK] > 16 {
		t.Errorf("%d followers were served, want 8 to 16 (half the socket's connections)", codes[http.StatusOK])
	}
	if _, stderr, code := runCLI(t, tp.dir, "status", "--ready", "--listen", "unix:"+tp.sock); code != 0 {
		t.Errorf("tend status --ready with %d followers: exit %d, want 0: %s", followers, code, stderr)
	}
	if code, body, err := getWithin(tcpClient(), "http://"+apiAddr+"/v1/live", 2*time.Second); err != nil || code != http.StatusOK {
		t.Errorf("/v1/live over TCP with %d followers: %d %q %v", followers, code, body, err)
	}
}

// Clients of /v1/logs that never read cost tend a bounded amount of memory: 8
// containers print 60 KB lines, 100 token-holding clients over TCP ask for 100 lines
// (half of them follow) and read nothing. tend's peak RSS stays under 150 MiB (each
// call copies a bounded batch at a time, and at most 64 are served over TCP at once)
// — before, every call copied every kept line of every ring (about 8 MB here) and
// held it while its write blocked: over 700 MiB. Then a client that reads gets its
// lines (the others are dropped after the write timeout).
func TestLogsSlowClientsMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	apiAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var b strings.Builder
	b.WriteString("containers:\n")
	for i := range 8 {
		fmt.Fprintf(&b, `  - name: c%d
    command: ["sh", "-c", "l=$(head -c 61440 /dev/zero | tr '\\0' x); while :; do echo $l; sleep 0.05; done"]
`, i)
	}
	tp := start(t, b.String(), runOpts{discard: true, bin: plainTend(t), // the race detector's memory is not tend's
		args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", apiAddr, "--api-token-file", tokenFile}})
	tp.waitStatus(10*time.Second, "all running", func(d status.Document) bool { return d.Ready.True() })
	time.Sleep(time.Second) // the rings fill (1 MiB each)
	pid := tp.pid()
	base := rss(t, pid)

	const clients = 100
	for i := range clients {
		query := "lines=100"
		if i%2 == 1 {
			query += "&follow=true"
		}
		c, err := net.Dial("tcp", apiAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/logs?%s HTTP/1.1\r\nHost: tend\r\nAuthorization: Bearer s3cret\r\n\r\n", query)
	}
	// The calls are under way and blocked on their clients for most of this.
	time.Sleep(5 * time.Second)
	peak := peakRSS(t, pid)
	t.Logf("tend RSS %.1f MiB before %d clients that do not read, peak %.1f MiB with them", mib(base), clients, mib(peak))
	if peak > 150<<20 {
		t.Errorf("tend's peak RSS with %d non-reading log clients is %.1f MiB, want under 150", clients, mib(peak))
	}

	req, _ := http.NewRequest("GET", "http://"+apiAddr+"/v1/logs?lines=5&container=c3", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	var got []string
	waitFor(t, 30*time.Second, "a reading client's lines", func() (bool, string) {
		client := tcpClient()
		client.Timeout = 5 * time.Second
		resp, err := client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Sprintf("%d %s", resp.StatusCode, body)
		}
		got = strings.Split(strings.TrimSpace(string(body)), "\n")
		return true, ""
	})
	if len(got) != 5 || !strings.Contains(got[4], `"container":"c3"`) || !strings.Contains(got[4], strings.Repeat("x", 61440)) {
		t.Errorf("a reading client got %d lines, want 5 whole lines of c3", len(got))
	}
}
