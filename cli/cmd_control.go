package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/status"
)

// statusCommand is `tend status [--json] [--watch] [--ready]`.
func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "query a running tend and print its status",
		Flags: []cli.Flag{
			listenFlag,
			&cli.BoolFlag{Name: "json", Usage: "print the status document as JSON"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "print the status again whenever it changes"},
			&cli.BoolFlag{Name: "ready", Usage: "print nothing; exit 0 ready, 1 not ready, 2 unreachable"},
		},
		Action: func(c *cli.Context) error {
			if err := extraArgs(c, 0); err != nil {
				return err
			}
			api := newAPI(c)
			if c.Bool("ready") {
				if code := checkReady(api); code != readyYes {
					return &exitError{code: code}
				}
				return nil
			}
			if c.Bool("watch") {
				return watchStatus(api, c.Bool("json"), os.Stdout)
			}
			body, err := api.call(route.Status, "")
			if err != nil {
				return err
			}
			return writeStatus(os.Stdout, body, c.Bool("json"))
		},
	}
}

// writeStatus writes a status document: the API's JSON as is, or a table.
func writeStatus(w io.Writer, body []byte, asJSON bool) error {
	if asJSON {
		return writeBody(w, body)
	}
	var doc status.Document
	if err := json.Unmarshal(body, &doc); err != nil {
		return fail(1, "status: bad answer: %v", err)
	}
	printStatus(w, doc)
	return nil
}

// writeBody writes a JSON answer of the API indented, as --json prints it (the API
// answers compact JSON).
func writeBody(w io.Writer, body []byte) error {
	var b bytes.Buffer
	if json.Indent(&b, body, "", "  ") != nil {
		b.Reset()
		b.Write(body)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// watchStatus prints the status, then again whenever it changes until tend stops
// answering. The API has no change feed, so it asks every half second; on a terminal
// each print replaces the last one, and follows usage too.
func watchStatus(api *api, asJSON bool, out *os.File) error {
	redraw := isTerminal(out)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last []byte
	for ; ; <-tick.C {
		body, err := api.call(route.Status, "")
		if err != nil {
			return err
		}
		var doc status.Document
		if err := json.Unmarshal(body, &doc); err != nil {
			return fail(1, "status: bad answer: %v", err)
		}
		doc.LastHeartbeatTime = nil // moves with every report without anything changing
		doc.Tend = nil              // tend's own CPU time moves with every read
		if !redraw {
			// Usage moves with every sample (each second): appended, it would print a
			// table a second. On a terminal the redrawn table shows it as it moves.
			for i := range doc.Containers {
				doc.Containers[i].Usage = status.Usage{}
			}
		}
		key, _ := json.Marshal(doc)
		if bytes.Equal(key, last) {
			continue
		}
		switch {
		case redraw:
			fmt.Fprint(out, "\x1b[H\x1b[2J") // cursor home, clear the screen
		case last != nil && !asJSON:
			fmt.Fprintln(out)
		}
		last = key
		if err := writeStatus(out, body, asJSON); err != nil {
			return err
		}
	}
}

// controlCommand is one of `tend restart|stop|start NAME...`, `tend reload`, `tend shutdown`.
func controlCommand(name, usage string, rt route.Route) *cli.Command {
	takesNames := rt.PerContainer()
	argsUsage := ""
	flags := []cli.Flag{listenFlag, tokenFlag}
	if takesNames {
		argsUsage = "NAME..."
		flags = append(flags, waitFlags()...)
	}
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: argsUsage,
		Flags:     flags,
		Action: func(c *cli.Context) error {
			if !takesNames {
				if err := extraArgs(c, 0); err != nil {
					return err
				}
				if _, err := newAPI(c).call(rt, ""); err != nil {
					return err
				}
				fmt.Println(name + ": ok")
				return nil
			}
			if c.NArg() == 0 {
				return fail(2, "%s: expected one or more container NAMEs (usage: tend %s NAME...)", name, name)
			}
			timeout, err := waitTimeout(c)
			if err != nil {
				return err
			}
			return controlEach(newAPI(c), name, rt, c.Args().Slice(), timeout)
		},
	}
}

// controlEach applies verb (restart, stop, start: its route rt) to each container in
// order, then (timeout > 0) waits until each is done, up to timeout, and reports each
// on its own line in that order, like `docker stop a b`. A container tend refuses
// (unknown, instance stopping) does not keep the rest from their turn; exit 1 if any
// was refused, failed or was not done in time. Not reaching tend at all ends it at once.
func controlEach(a *api, verb string, rt route.Route, names []string, timeout time.Duration) error {
	before := map[string]status.Container{}
	if timeout > 0 {
		doc, err := a.status()
		if err != nil {
			return err
		}
		for _, c := range doc.Containers {
			before[c.Name] = c
		}
	}
	refused := false
	var goals []goal
	for _, n := range names {
		_, err := a.call(rt, n)
		var r *refusal
		switch {
		case err == nil && timeout > 0:
			goals = append(goals, containerGoal(verb, n, before[n]))
		case err == nil:
			fmt.Printf("%s %s: ok\n", verb, n)
		case errors.As(err, &r) && r.perContainer():
			fmt.Fprintf(os.Stderr, "tend: %s %s: %v\n", verb, n, err)
			refused = true
		default:
			return err
		}
	}
	allDone, err := waitGoals(a, timeout, goals, func(g goal, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "tend: %s %s: %v\n", verb, g.name, err)
			return
		}
		fmt.Printf("%s %s: ok\n", verb, g.name)
	})
	if err != nil {
		return err
	}
	if refused || !allDone {
		return &exitError{code: 1}
	}
	return nil
}

// api is the running tend that status and the control commands talk to: --listen
// (or TEND_LISTEN), else ./tend.sock (route.Socket).
type api struct {
	addr      string
	isDefault bool // no --listen or TEND_LISTEN: addr is the default socket
	base      string
	client    *http.Client
	tokenFile string
}

const defaultSocket = "./" + route.Socket

func newAPI(c *cli.Context) *api {
	a := &api{addr: "unix:" + defaultSocket, isDefault: true, base: "http://tend", tokenFile: c.String("api-token-file")}
	if l := c.StringSlice("listen"); len(l) > 0 {
		a.addr, a.isDefault = l[0], false
	}
	// The API answers at once (the control commands poll until done); a follower of
	// the logs ends its own request.
	a.client = &http.Client{Timeout: 10 * time.Minute}
	if sock, ok := strings.CutPrefix(a.addr, "unix:"); ok {
		a.client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
	} else {
		a.base = "http://" + a.addr
	}
	return a
}

// refusal is an answer of tend other than 200: it was reached and said no.
type refusal struct {
	status int
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// perContainer tells whether the refusal concerns one container (unknown, not now),
// so that the next container of a command is still worth trying.
func (r *refusal) perContainer() bool {
	return r.status != http.StatusUnauthorized && r.status != http.StatusForbidden
}

// call sends one API request, rt for the container name (if rt names one), and
// returns the body of a 200 answer. Any other answer is a *refusal wrapped in an
// exit-1 error; not reaching tend is an exit-1 error that says where it looked.
func (a *api) call(rt route.Route, name string) ([]byte, error) {
	return a.send(rt, name, "", nil)
}

// send is call with a query string and a request body (nil: none).
func (a *api) send(rt route.Route, name, query string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := a.base + rt.URL(name)
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest(rt.Method, u, rd)
	if err != nil {
		return nil, fail(2, "bad --listen address %q: %v", a.addr, err)
	}
	if a.tokenFile != "" {
		tok, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return nil, fail(1, "read --api-token-file: %v", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, a.unreachable(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fail(1, "read answer from %s: %v", a.addr, err)
	}
	if resp.StatusCode == http.StatusOK {
		return answer, nil
	}
	msg := a.refusalText(resp, answer)
	return nil, &exitError{code: 1, msg: msg, cause: &refusal{status: resp.StatusCode, msg: msg}}
}

// refusalText says why tend answered resp (not 200): its "error", or the status, and
// for a 403 without a token how to pass one.
func (a *api) refusalText(resp *http.Response, body []byte) string {
	var e struct {
		Error  string `json:"error"`
		Errors []struct {
			Line  int    `json:"line"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	msg := fmt.Sprintf("%s answered %s", a.addr, resp.Status)
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
		for _, f := range e.Errors { // a spec tend refused: every error with its line
			msg += fmt.Sprintf("\n  line %d: %s", f.Line, f.Error)
		}
	}
	if resp.StatusCode == http.StatusForbidden && a.tokenFile == "" {
		msg += "; pass --api-token-file FILE (or TEND_API_TOKEN_FILE) with the token the tend at " + a.addr + " was started with"
	}
	return msg
}

// unreachable is the error for a tend that did not answer; for the default socket
// it says where tend looked and how to point it elsewhere.
func (a *api) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // without the request's made-up URL
	}
	if a.isDefault {
		where, _ := filepath.Abs(defaultSocket)
		if _, statErr := os.Stat(defaultSocket); os.IsNotExist(statErr) {
			return fail(1, "no tend socket at %s (no --listen or TEND_LISTEN given, so tend looked in the current directory); point to a running tend with --listen unix:PATH or TEND_LISTEN=unix:PATH", where)
		}
		return fail(1, "no tend is answering at %s (the default socket; --listen ADDR or TEND_LISTEN picks another): %v", where, err)
	}
	return fail(1, "no tend is answering at %s: %v", a.addr, err)
}

// printStatus prints the status document as a table for people.
func printStatus(w io.Writer, doc status.Document) {
	if line := limitsLine(doc); line != "" {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "instance %s  revision %s  state %s  installed %s  ready %s\n",
		doc.Instance, doc.Revision, doc.State, doc.Installed.Status, doc.Ready.Status)
	if !doc.Ready.True() && doc.Ready.Message != "" {
		fmt.Fprintf(w, "  not ready: %s\n", doc.Ready.Message)
	}
	if doc.ReloadError != "" {
		// One spec error a line (a reload's errors), indented under the heading.
		fmt.Fprintf(w, "  reload error: %s\n", strings.ReplaceAll(doc.ReloadError, "\n", "\n    "))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCONTAINER\tSTATE\tPID\tRESTARTS\tREADY\tALIVE\tCPU\tMEM\tSINCE\tLAST EXIT\tNOTE")
	for _, ic := range doc.InitContainers {
		fmt.Fprintf(tw, "%s (init)\t%s\t-\t%d\t-\t-\t-\t-\t-\t%s\t-\n", ic.Name, ic.State, max(0, ic.Attempts-1), exitText(ic.LastExit))
	}
	preparing := preparingNote(doc)
	for _, c := range doc.Containers {
		pid := "-"
		if c.Pid != nil {
			pid = fmt.Sprint(*c.Pid)
		}
		since := "-"
		if c.StartedAt != nil && c.State == status.Running {
			since = time.Since(c.StartedAt.Time).Round(time.Second).String()
		}
		state := string(c.State)
		if c.StopStep != "" {
			state += "/" + c.StopStep
		}
		if c.NextStartAt != nil {
			state += fmt.Sprintf(" (in %s)", time.Until(c.NextStartAt.Time).Round(100*time.Millisecond))
		}
		n := note(c)
		if n == "-" && c.State == status.Waiting && preparing != "" {
			n = preparing
		}
		cpu, mem := usageText(c)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, state, pid, c.Restarts, readyText(c), c.Alive.Status, cpu, mem, since, exitText(c.LastExit), n)
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

// readyText is a container's READY column: "-" for a stopped one (by tend stop or
// target_state removed), whose ready condition is True only so that it does not hold
// the instance back (its status says why); the condition's status otherwise.
func readyText(c status.Container) string {
	if c.State == status.Stopped {
		return "-"
	}
	return c.Ready.Status
}

// usageText is a container's CPU (% of one core over the last sample) and MEM columns;
// "-" for a container with no process.
func usageText(c status.Container) (cpu, mem string) {
	if c.Pid == nil {
		return "-", "-"
	}
	return fmt.Sprintf("%.1f%%", c.Usage.CPUPercent), status.HumanBytes(c.Usage.MemoryBytes)
}

// preparingNote is what every container waits for while the instance prepares: the
// init container that has not succeeded yet, or the resources; "" otherwise.
func preparingNote(doc status.Document) string {
	if doc.State != status.InstancePreparing {
		return ""
	}
	for _, ic := range doc.InitContainers {
		if ic.State != status.Succeeded {
			return "waiting for init container " + ic.Name
		}
	}
	return "waiting for the instance to be prepared"
}

// note is what a container waits for (depends_on), why it failed, the last
// STATUS= it sent, as far as there is any, and whether the instance's readiness
// leaves it out (affects_readiness: false).
func note(c status.Container) string {
	var parts []string
	if len(c.WaitingFor) > 0 {
		parts = append(parts, "waiting for "+strings.Join(c.WaitingFor, ", "))
	}
	if c.State == status.Failed && c.Ready.Message != "" {
		parts = append(parts, c.Ready.Message)
	}
	if c.StatusText != "" {
		parts = append(parts, c.StatusText)
	}
	if !c.AffectsReadiness {
		parts = append(parts, "readiness not counted")
	}
	return dash(strings.Join(parts, "; "))
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
	return string(x.Reason)
}

// limitsLine is the line status opens with when a container's limits could not be
// applied (docs/reference.md "Cgroups and limits"): with cgroups off, "cgroups off: <reason>; limits not applied
// to <containers>"; "" when every limit applies.
func limitsLine(doc status.Document) string {
	var names []string
	for _, c := range doc.Containers {
		if !c.LimitsApplied {
			names = append(names, c.Name)
		}
	}
	switch {
	case len(names) == 0:
		return ""
	case doc.Cgroups.Mode == status.CgroupsOff:
		return fmt.Sprintf("cgroups off: %s; limits not applied to %s", doc.Cgroups.Reason, strings.Join(names, ", "))
	}
	return fmt.Sprintf("limits not applied to %s (tend describe NAME says why)", strings.Join(names, ", "))
}
