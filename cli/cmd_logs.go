package cli

import (
	"bufio"
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
	req, err := http.NewRequest(route.Logs.Method, a.base+path, nil)
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
		// One write per line: a follower sees each line as it comes.
		if asJSON {
			fmt.Fprintf(out, "%s\n", sc.Bytes())
			continue
		}
		var e struct{ Time, Container, Line string }
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			return fail(1, "logs: bad answer: %q", sc.Text())
		}
		fmt.Fprintf(out, "%s %s | %s\n", e.Time, e.Container, e.Line)
	}
	return nil // the stream ended: tend stopped, or it was not a follow
}
