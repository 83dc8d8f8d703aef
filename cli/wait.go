package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/status"
)

// The commands that change what runs (restart, start, stop; apply, activate and
// rollback of revisions) wait until it is done: the API answers as soon as the
// action has begun, and the CLI polls the status until what it asked for holds, up
// to --timeout, or returns at once with --no-wait (docs/reference.md "Control
// commands wait").

// defaultWaitTimeout is --timeout's default.
const defaultWaitTimeout = 60 * time.Second

// pollInterval is how often a waiting command reads the status: the API has no
// change feed.
const pollInterval = 100 * time.Millisecond

// waitFlags are --timeout and --no-wait of a command that waits until done.
func waitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "timeout", Value: defaultWaitTimeout, Usage: "how long to wait until done (e.g. 90s, 5m); exit 1 when it runs out"},
		&cli.BoolFlag{Name: "no-wait", Usage: "return as soon as tend has begun the action"},
	}
}

// waitTimeout is the command's --timeout, or 0 with --no-wait (do not wait). A
// negative --timeout is a usage error.
func waitTimeout(c *cli.Context) (time.Duration, error) {
	if c.Bool("no-wait") {
		return 0, nil
	}
	d := c.Duration("timeout")
	if d <= 0 {
		return 0, fail(2, "%s: --timeout must be more than 0, got %s (--no-wait does not wait)", c.Command.Name, d)
	}
	return d, nil
}

// A goal is one thing a command waits for. check looks at a status document: done,
// or what it still waits for (said when the time runs out), or an error when it can
// no longer be done (a container that gave up).
type goal struct {
	name  string
	check func(doc status.Document) (done bool, waitingFor string, err error)
}

// waitGoals polls the status until every goal is done, or timeout passes. Each
// goal's outcome goes to report in the goals' order, as soon as it and every goal
// before it are known: nil when done, the error of one that can no longer be done,
// or the time-out naming what it waits for. It returns whether every goal was
// done; not reaching tend ends it with that error.
func waitGoals(a *api, timeout time.Duration, goals []goal, report func(g goal, err error)) (bool, error) {
	if len(goals) == 0 {
		return true, nil
	}
	outcome := make([]error, len(goals))
	known := make([]bool, len(goals))
	reported, allDone := 0, true
	flush := func() {
		for reported < len(goals) && known[reported] {
			report(goals[reported], outcome[reported])
			reported++
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	waiting := make([]string, len(goals))
	for {
		doc, err := a.status()
		if err != nil {
			return false, err
		}
		for i, g := range goals {
			if known[i] {
				continue
			}
			done, what, err := g.check(doc)
			switch {
			case err != nil:
				known[i], outcome[i], allDone = true, err, false
			case done:
				known[i] = true
			default:
				waiting[i] = what
			}
		}
		flush()
		if reported == len(goals) {
			return allDone, nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			for i := range goals {
				if !known[i] {
					known[i], outcome[i] = true, fmt.Errorf("not done after %s (--timeout): waiting for %s", timeout, waiting[i])
				}
			}
			flush()
			return false, nil
		}
	}
}

// containerGoal is what `tend VERB NAME` waits for, given the container's status
// entry before the request (see controlDone).
func containerGoal(verb, name string, before status.Container) goal {
	return goal{name: name, check: func(doc status.Document) (bool, string, error) {
		for _, c := range doc.Containers {
			if c.Name == name {
				return controlDone(verb, before, c)
			}
		}
		return false, "", fmt.Errorf("%s is no longer in the spec (a reload removed it)", name)
	}}
}

// controlDone says whether verb (restart, start, stop) is done for a container whose
// status entry was before when it was asked and is now now: stopped; or started (a
// new run since the request, or running already for start) and, while it runs,
// ready — without a readiness check a running container is ready at once, and a run
// that ended (a scheduled or one-off container) is done too. A container that gave
// up (failed) after the request can no longer be done. Else it says what it waits for.
func controlDone(verb string, before, now status.Container) (done bool, waitingFor string, err error) {
	state := string(now.State)
	if len(now.WaitingFor) > 0 {
		state += ", waiting for " + strings.Join(now.WaitingFor, ", ")
	}
	if verb == "stop" {
		switch now.State {
		case status.Stopped, status.Completed, status.Failed:
			return true, "", nil
		}
		if now.StopStep != "" {
			state += "/" + now.StopStep
		}
		return false, fmt.Sprintf("%s to stop (now %s)", now.Name, state), nil
	}
	started := !sameTime(before.StartedAt, now.StartedAt) || now.Restarts != before.Restarts ||
		(verb == "start" && before.State == status.Running)
	if !started {
		return false, fmt.Sprintf("%s to start (now %s)", now.Name, state), nil
	}
	switch now.State {
	case status.Running:
		if now.Ready.True() {
			return true, "", nil
		}
		why := ""
		if now.Ready.Message != "" {
			why = ": " + now.Ready.Message
		}
		return false, fmt.Sprintf("%s to be ready (ready %s%s)", now.Name, now.Ready.Status, why), nil
	case status.Completed, status.Waiting:
		return true, "", nil // the run ended (a scheduled or one-off container)
	case status.Failed:
		return false, "", fmt.Errorf("%s failed: %s", now.Name, failureText(now))
	case status.Backoff:
		return false, fmt.Sprintf("%s to start again (backoff after %s)", now.Name, failureText(now)), nil
	}
	return false, fmt.Sprintf("%s to start (now %s)", now.Name, state), nil
}

// failureText is why a container's last run ended, as far as the status tells.
func failureText(c status.Container) string {
	switch {
	case c.State == status.Failed && c.Ready.Message != "":
		return c.Ready.Message
	case c.LastExit != nil && c.LastExit.Reason != "":
		return string(c.LastExit.Reason)
	}
	return "its last run ended"
}

func sameTime(a, b *status.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Equal(b.Time)
}

// status is the status document now.
func (a *api) status() (status.Document, error) {
	var doc status.Document
	body, err := a.call(route.Status, "")
	if err != nil {
		return doc, err
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, fail(1, "status: bad answer: %v", err)
	}
	return doc, nil
}
