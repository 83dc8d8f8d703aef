// Command benchprober is the reference floor of the probe-cost benchmark (bench/run.sh,
// scenario 4): not a supervisor, just the least a Go program can do for the same load.
// It starts N benchhttpd children on ports BASE+1..BASE+N and sends each of them two
// GETs of http://localhost:PORT/ per second (a "liveness" and a "readiness" loop), with
// one shared net/http client, keep-alive on or off. SIGTERM kills the children and exits.
//
// usage: benchprober -httpd PATH [-n 100] [-base 31000] [-keepalive]
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	httpd := flag.String("httpd", "", "path of benchhttpd")
	n := flag.Int("n", 100, "servers")
	base := flag.Int("base", 31000, "ports are base+1..base+n")
	keepalive := flag.Bool("keepalive", false, "reuse connections")
	delay := flag.Duration("delay", 2*time.Second, "initial delay before the first probe")
	flag.Parse()
	if *httpd == "" {
		fmt.Fprintln(os.Stderr, "benchprober: -httpd is required")
		os.Exit(2)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	var kids []*exec.Cmd
	for i := 1; i <= *n; i++ {
		c := exec.Command(*httpd, strconv.Itoa(*base+i))
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "benchprober: %v\n", err)
			os.Exit(1)
		}
		kids = append(kids, c)
	}

	client := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: !*keepalive, MaxIdleConnsPerHost: 2},
	}
	probe := func(url string) {
		time.Sleep(*delay)
		t := time.NewTicker(time.Second)
		for range t.C {
			resp, err := client.Get(url)
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	for i := 1; i <= *n; i++ {
		url := "http://localhost:" + strconv.Itoa(*base+i) + "/"
		go probe(url) // liveness
		go probe(url) // readiness
	}

	<-sig
	for _, c := range kids {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
	}
	for _, c := range kids {
		_ = c.Wait()
	}
}
