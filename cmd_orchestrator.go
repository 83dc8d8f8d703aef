package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
)

// printGrace is `tend render --grace`: the shutdown grace period in whole seconds,
// for terminationGracePeriodSeconds (README "Running on Kubernetes").
func printGrace(path string, s *spec.Spec) error {
	grace, err := restart.Grace(s)
	if err != nil {
		return fail(1, "render --grace %s: %v", path, err)
	}
	fmt.Println(int64(grace / time.Second))
	return nil
}

// Exit codes of `tend status --ready`, a health command for images without a shell.
const (
	readyYes         = 0
	readyNo          = 1
	readyUnreachable = 2
)

// readyTimeout bounds one --ready check: an orchestrator's health command has a
// timeout of its own, and a tend that does not answer in time is not healthy.
const readyTimeout = 5 * time.Second

// apiAddr is the address of the running tend: --listen / TEND_LISTEN, or ./tend.sock.
func apiAddr(c *cli.Context) string {
	if l := c.StringSlice("listen"); len(l) > 0 {
		return l[0]
	}
	return "unix:./tend.sock"
}

// checkReady asks the tend at addr (unix:PATH or HOST:PORT) for GET /v1/ready and
// returns the exit code of `tend status --ready`. It prints nothing.
func checkReady(addr string) int {
	client := &http.Client{Timeout: readyTimeout}
	base := "http://" + addr
	if sock, ok := strings.CutPrefix(addr, "unix:"); ok {
		base = "http://tend"
		client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
	}
	resp, err := client.Get(base + "/v1/ready")
	if err != nil {
		return readyUnreachable
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return readyYes
	case http.StatusServiceUnavailable:
		return readyNo
	default:
		return readyUnreachable // not a tend answering
	}
}
