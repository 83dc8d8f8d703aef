package cli

import (
	"fmt"
	"net/http"
	"time"

	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/spec"
)

// printGrace is `tend render --grace`: the shutdown grace period in whole seconds,
// for terminationGracePeriodSeconds (docs/reference.md "Running on Kubernetes").
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

// checkReady asks the running tend for GET /v1/ready and returns the exit code of
// `tend status --ready`. It prints nothing.
func checkReady(a *api) int {
	a.client.Timeout = readyTimeout
	resp, err := a.client.Get(a.base + route.Ready.URL(""))
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
