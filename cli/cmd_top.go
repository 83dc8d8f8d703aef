package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/status"
	"github.com/tend-sh/tend/top"
)

// topCommand is `tend top [--interval DUR]` (docs/reference.md "Watching a running
// instance").
func topCommand() *cli.Command {
	return &cli.Command{
		Name:  "top",
		Usage: "a live terminal view of a running tend",
		Flags: []cli.Flag{
			listenFlag,
			tokenFlag,
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "how often the view reads the status"},
		},
		Action: func(c *cli.Context) error {
			if err := extraArgs(c, 0); err != nil {
				return err
			}
			interval := c.Duration("interval")
			if interval <= 0 {
				return fail(2, "top: --interval must be more than 0, got %s", interval)
			}
			if !isTerminal(os.Stdout) || !isTerminal(os.Stdin) {
				return fail(2, "top: needs a terminal (stdin and stdout); in a script or a pipe, `tend status --watch` prints the status whenever it changes")
			}
			a := newAPI(c)
			// The view must tell a tend that stopped answering, not wait on it; the API
			// answers actions as soon as they have begun.
			a.client.Timeout = 5 * time.Second
			m := top.NewModel(a.addr, interval, os.Getenv("NO_COLOR") == "")
			if err := top.Run(topClient{a}, m, os.Stdin, os.Stdout); err != nil {
				return fail(1, "top: %v", err)
			}
			return nil
		},
	}
}

// topClient is the API as tend top uses it (top.Client).
type topClient struct{ a *api }

func (t topClient) Status() (*status.Document, error) {
	doc, err := t.a.status()
	if err != nil {
		return nil, err
	}
	return &doc, nil
}

func (t topClient) Describe(name string, now time.Time) ([]string, error) {
	body, err := t.a.call(route.Container, name)
	if err != nil {
		return nil, err
	}
	var d status.ContainerDetail
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fail(1, "describe: bad answer: %v", err)
	}
	var b bytes.Buffer
	printDetail(&b, d, now)
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n"), nil
}

// topRoute is the route of one of the view's actions.
func topRoute(a top.Action) route.Route {
	switch a {
	case top.Stop:
		return route.Stop
	case top.Start:
		return route.Start
	case top.Activate:
		return route.ActivateRevision
	case top.Rollback:
		return route.Rollback
	}
	return route.Restart
}

func (t topClient) Do(action top.Action, target string) error {
	_, err := t.a.call(topRoute(action), target)
	return err
}

func (t topClient) FollowLogs(ctx context.Context, name string, line func(string)) error {
	q := url.Values{"lines": {"200"}, "follow": {"true"}, "container": {name}}
	return readLogs(ctx, t.a, route.Logs.Path+"?"+q.Encode(), func(b []byte) error {
		e, err := logEntry(b)
		if err != nil {
			return err
		}
		at := e.Time
		if ts, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
			at = ts.Local().Format(time.TimeOnly)
		}
		line(at + " " + e.Line)
		return nil
	})
}
