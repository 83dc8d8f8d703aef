package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/status"
)

// statusCommand is `tend status [--json|--ready]`.
func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "query a running tend and print its status",
		Flags: []cli.Flag{
			listenFlag,
			&cli.BoolFlag{Name: "json", Usage: "print the status document as JSON"},
			&cli.BoolFlag{Name: "ready", Usage: "print nothing; exit 0 ready, 1 not ready, 2 unreachable"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("ready") {
				if code := checkReady(apiAddr(c)); code != readyYes {
					return &exitError{code: code}
				}
				return nil
			}
			body, err := call(c, http.MethodGet, "/v1/status")
			if err != nil {
				return err
			}
			if c.Bool("json") {
				_, err := os.Stdout.Write(body)
				return err
			}
			var doc status.Document
			if err := json.Unmarshal(body, &doc); err != nil {
				return fail(1, "status: bad answer: %v", err)
			}
			printStatus(os.Stdout, doc)
			return nil
		},
	}
}

// controlCommand is one of `tend restart|stop|start NAME`, `tend reload`, `tend shutdown`.
func controlCommand(name, usage string, needsName bool) *cli.Command {
	argsUsage := ""
	if needsName {
		argsUsage = "NAME"
	}
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: argsUsage,
		Flags: []cli.Flag{
			listenFlag,
			&cli.StringFlag{Name: "api-token-file", Usage: "bearer token for a TCP address", EnvVars: []string{"TEND_API_TOKEN_FILE"}},
		},
		Action: func(c *cli.Context) error {
			path := "/v1/" + name
			if needsName {
				if c.NArg() != 1 {
					return fail(2, "%s: expected a container NAME", name)
				}
				path = "/v1/containers/" + c.Args().First() + "/" + name
			} else if c.NArg() != 0 {
				return fail(2, "%s: takes no arguments", name)
			}
			if _, err := call(c, http.MethodPost, path); err != nil {
				return err
			}
			fmt.Println(name + ": ok")
			return nil
		},
	}
}

// call sends one API request to the running tend found through --listen /
// TEND_LISTEN, or ./tend.sock.
func call(c *cli.Context, method, path string) ([]byte, error) {
	addr := "unix:./tend.sock"
	if l := c.StringSlice("listen"); len(l) > 0 {
		addr = l[0]
	}
	client := &http.Client{Timeout: 10 * time.Minute}
	base := "http://" + addr
	if sock, ok := strings.CutPrefix(addr, "unix:"); ok {
		base = "http://tend"
		client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
	}
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		return nil, fail(2, "bad --listen address %q: %v", addr, err)
	}
	if f := c.String("api-token-file"); f != "" && method != http.MethodGet {
		tok, err := os.ReadFile(f)
		if err != nil {
			return nil, fail(1, "read --api-token-file: %v", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail(1, "no tend is answering at %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fail(1, "read answer from %s: %v", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return nil, fail(1, "%s", e.Error)
		}
		return nil, fail(1, "%s answered %s", addr, resp.Status)
	}
	return body, nil
}

// printStatus prints the status document as a table for people.
func printStatus(w io.Writer, doc status.Document) {
	fmt.Fprintf(w, "instance %s  revision %s  state %s  installed %s  ready %s\n",
		doc.Instance, doc.Revision, doc.State, doc.Installed.Status, doc.Ready.Status)
	if !doc.Ready.True() && doc.Ready.Message != "" {
		fmt.Fprintf(w, "  not ready: %s\n", doc.Ready.Message)
	}
	if doc.ReloadError != "" {
		fmt.Fprintf(w, "  reload error: %s\n", doc.ReloadError)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCONTAINER\tSTATE\tPID\tRESTARTS\tREADY\tALIVE\tSINCE\tLAST EXIT")
	for _, ic := range doc.InitContainers {
		fmt.Fprintf(tw, "%s (init)\t%s\t-\t%d\t-\t-\t-\t%s\n", ic.Name, ic.State, max(0, ic.Attempts-1), exitText(ic.LastExit))
	}
	for _, c := range doc.Containers {
		pid := "-"
		if c.Pid != nil {
			pid = fmt.Sprint(*c.Pid)
		}
		since := "-"
		if c.StartedAt != nil && c.State == status.Running {
			since = time.Since(c.StartedAt.Time).Round(time.Second).String()
		}
		state := c.State
		if c.StopStep != "" {
			state += "/" + c.StopStep
		}
		if c.NextStartAt != nil {
			state += fmt.Sprintf(" (in %s)", time.Until(c.NextStartAt.Time).Round(100*time.Millisecond))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, state, pid, c.Restarts, c.Ready.Status, c.Alive.Status, since, exitText(c.LastExit))
	}
	tw.Flush()
	if len(doc.Resources) > 0 || len(doc.DynamicResources) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nRESOURCE\tSTATE\tREVISION\tPROGRESS\tREASON")
		for _, r := range doc.Resources {
			fmt.Fprintf(tw, "%s\t%s\t-\t%s\t%s\n", r.Name, r.State, progress(r), dash(r.Reason))
		}
		for _, r := range doc.DynamicResources {
			fmt.Fprintf(tw, "%s (dynamic)\t%s\t%d (active %d)\t-\t%s\n", r.Name, r.State, r.Revision, r.ActiveRevision, dash(r.Reason))
		}
		tw.Flush()
	}
}

func progress(r status.Resource) string {
	if r.BytesTotal == nil {
		if r.BytesDone == 0 {
			return "-"
		}
		return fmt.Sprintf("%d B", r.BytesDone)
	}
	if *r.BytesTotal == 0 {
		return "100%"
	}
	return fmt.Sprintf("%d%% of %d B", r.BytesDone*100 / *r.BytesTotal, *r.BytesTotal)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func exitText(x *status.Exit) string {
	if x == nil {
		return "-"
	}
	return x.Reason
}
