package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/route"
)

// logsCommand is `tend logs [-f] [-n N] [--json] [NAME...]` (docs/reference.md "Logs").
func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print the output a running tend kept of its containers",
		ArgsUsage: "[NAME...]",
		Flags: []cli.Flag{
			listenFlag,
			tokenFlag,
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "go on printing new lines as they come"},
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: 100, Usage: "print the last N lines first (over all the containers, by time)"},
			&cli.BoolFlag{Name: "json", Usage: "print the API's JSON lines"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("lines") < 0 {
				return fail(2, "logs: -n must be 0 or more, got %d", c.Int("lines"))
			}
			q := url.Values{"lines": {strconv.Itoa(c.Int("lines"))}}
			if c.Bool("follow") {
				q.Set("follow", "true")
			}
			for _, name := range c.Args().Slice() {
				q.Add("container", name)
			}
			return streamLogs(newAPI(c), route.Logs.Path+"?"+q.Encode(), c.Bool("json"), os.Stdout)
		},
	}
}

// streamLogs prints the answer line by line as it arrives, until tend ends it.
func streamLogs(a *api, path string, asJSON bool, out io.Writer) error {
	return readLogs(context.Background(), a, path, func(line []byte) error {
		// One write per line: a follower sees each line as it comes.
		if asJSON {
			fmt.Fprintf(out, "%s\n", line)
			return nil
		}
		e, err := logEntry(line)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s | %s\n", e.Time, e.Container, e.Line)
		return nil
	})
}

// logLine is one line of GET /v1/logs.
type logLine struct{ Time, Container, Line string }

func logEntry(b []byte) (logLine, error) {
	var e logLine
	if json.Unmarshal(b, &e) != nil {
		return e, fail(1, "logs: bad answer: %q", b)
	}
	return e, nil
}

// readLogs asks for path (GET /v1/logs with its query) and hands each line of the
// answer to each as it arrives, until tend ends it, ctx ends or each fails.
func readLogs(ctx context.Context, a *api, path string, each func([]byte) error) error {
	req, err := http.NewRequestWithContext(ctx, route.Logs.Method, a.base+path, nil)
	if err != nil {
		return fail(2, "bad --listen address %q: %v", a.addr, err)
	}
	if a.tokenFile != "" {
		tok, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return fail(1, "read --api-token-file: %v", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	// No timeout: a follow lasts as long as tend or the person wants.
	resp, err := (&http.Client{Transport: a.client.Transport}).Do(req)
	if err != nil {
		return a.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return fail(1, "logs: %s", a.refusalText(resp, body))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // a 64 KiB line, JSON-escaped
	for sc.Scan() {
		if err := each(sc.Bytes()); err != nil {
			return err
		}
	}
	return nil // the stream ended: tend stopped, or it was not a follow
}
