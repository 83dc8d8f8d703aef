package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/status"
)

// describeCommand is `tend describe NAME [--json]`.
func describeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "print one container's status, probe results and events",
		ArgsUsage: "NAME",
		Flags: []cli.Flag{
			listenFlag,
			&cli.BoolFlag{Name: "json", Usage: "print the document as JSON"},
			tokenFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fail(2, "describe: expected one container NAME (usage: tend describe NAME)")
			}
			body, err := newAPI(c).call(route.Container, c.Args().First())
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeBody(os.Stdout, body)
			}
			var d status.ContainerDetail
			if err := json.Unmarshal(body, &d); err != nil {
				return fail(1, "describe: bad answer: %v", err)
			}
			printDetail(os.Stdout, d, time.Now())
			return nil
		},
	}
}

// printDetail prints a container for people, as `kubectl describe` does: its status
// fields, its probes' last checks and its events, with times relative to now.
func printDetail(w io.Writer, d status.ContainerDetail, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	field("Name", d.Name)
	state := string(d.State)
	if d.StopStep != "" {
		state += "/" + d.StopStep
	}
	field("State", state)
	field("Target state", d.TargetState)
	pid := "-"
	if d.Pid != nil {
		pid = fmt.Sprint(*d.Pid)
	}
	field("Pid", pid)
	if d.OldPid != nil {
		field("Old pid", fmt.Sprintf("%d (start first: stopped once the new one is ready)", *d.OldPid))
	}
	field("Started", timeText(d.StartedAt, now))
	field("Restarts", fmt.Sprint(d.Restarts))
	field("Next start", timeText(d.NextStartAt, now))
	field("Alive", conditionText(d.Alive))
	field("Ready", conditionText(d.Ready))
	field("Last exit", exitDetail(d.LastExit, now))
	if len(d.WaitingFor) > 0 {
		field("Waiting for", strings.Join(d.WaitingFor, ", "))
	}
	if d.StatusText != "" {
		field("Status text", d.StatusText)
	}
	if d.StoppedByRequest {
		field("Stopped by request", "yes (tend start NAME starts it)")
	}
	if d.LogError != "" {
		field("Log error", d.LogError)
	}
	field("Cgroup", dash(d.Cgroup))
	if d.LimitsApplied || d.LimitsReason == "" {
		field("Limits applied", yesNo(d.LimitsApplied))
	} else {
		field("Limits applied", "no ("+d.LimitsReason+")")
	}
	u := d.Usage
	field("Usage", fmt.Sprintf("CPU %.2f s (%.1f%% now), memory %s, pids %d, OOM kills %d",
		u.CPUSeconds, u.CPUPercent, status.HumanBytes(u.MemoryBytes), u.Pids, u.OOMKills))
	tw.Flush()
	for _, kind := range []string{"startup", "liveness", "readiness"} {
		p, ok := d.Probes[kind]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "\nProbe %s:\n", kind)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  AGE\tRESULT\tDURATION\tMESSAGE")
		for _, r := range p.Last {
			fmt.Fprintf(tw, "  %s\t%s\t%d ms\t%s\n", ago(r.Time.Time, now), r.Result, r.DurationMs, dash(r.Message))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nEvents:")
	if len(d.Events) == 0 {
		fmt.Fprintln(w, "  <none>")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  AGE\tTYPE\tREASON\tMESSAGE")
	for _, e := range d.Events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", ago(e.Time.Time, now), e.Type, e.Reason, e.Message)
	}
	tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func conditionText(c status.Condition) string {
	s := c.Status + " (" + string(c.Reason)
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s + ")"
}

func exitDetail(x *status.Exit, now time.Time) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%s, code %d, %s", x.Reason, x.Code, ago(x.At.Time, now))
}

// timeText is a time of the document as an absolute time and how far from now.
func timeText(t *status.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	if t.After(now) {
		return fmt.Sprintf("%s (in %s)", t.Local().Format(time.DateTime), status.HumanDuration(t.Sub(now)))
	}
	return fmt.Sprintf("%s (%s)", t.Local().Format(time.DateTime), ago(t.Time, now))
}

// ago is how long before now t was, in the unit that fits: "3m ago".
func ago(t, now time.Time) string {
	return status.HumanDuration(now.Sub(t)) + " ago"
}
