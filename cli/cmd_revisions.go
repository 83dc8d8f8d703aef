package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// The commands of a running tend's revisions (docs/reference.md "Updates and
// rollback"): revisions, apply, activate, rollback.

// revisionsCommand is `tend revisions [--json]`.
func revisionsCommand() *cli.Command {
	return &cli.Command{
		Name:  "revisions",
		Usage: "list the revisions of a running tend, newest first",
		Flags: []cli.Flag{listenFlag, tokenFlag, &cli.BoolFlag{Name: "json", Usage: "print the JSON list"}},
		Action: func(c *cli.Context) error {
			if err := extraArgs(c, 0); err != nil {
				return err
			}
			body, err := newAPI(c).call(route.Revisions, "")
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeBody(os.Stdout, body)
			}
			var doc struct {
				Revisions []status.Revision `json:"revisions"`
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				return fail(1, "revisions: bad answer: %v", err)
			}
			return writeRevisions(os.Stdout, doc.Revisions)
		},
	}
}

// writeRevisions prints the list as a table.
func writeRevisions(w io.Writer, list []status.Revision) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACTIVE\tSOURCE\tCREATED\tINSTALLED\tREADY\tDISK")
	for _, r := range list {
		active := ""
		if r.Active {
			active = "*"
		}
		ready := r.Ready.Status + " " + string(r.Ready.Reason)
		if r.Ready.Message != "" && !r.Active {
			ready += ": " + r.Ready.Message
		}
		installed := r.Installed.Status + " " + string(r.Installed.Reason)
		if r.Installed.Message != "" {
			installed += ": " + r.Installed.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.ID, active, r.Source, r.CreatedAt.Format(time.RFC3339), installed, ready, r.DiskBytes)
	}
	return tw.Flush()
}

// applyCommand is `tend apply [--dry-run] FILE`.
func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "install a spec as a revision of a running tend (and activate it with activate: auto)",
		ArgsUsage: "FILE",
		Flags: append([]cli.Flag{listenFlag, tokenFlag, varFlag,
			&cli.BoolFlag{Name: "dry-run", Usage: "change nothing; print what activating it would do"}}, waitFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fail(2, "apply: expected a FILE argument (usage: tend apply [--dry-run] FILE)")
			}
			if err := extraArgs(c, 1); err != nil {
				return err
			}
			timeout, err := waitTimeout(c)
			if err != nil {
				return err
			}
			path := c.Args().First()
			data, err := spec.ReadFile(path)
			if err != nil {
				return fail(1, "apply: %v", err)
			}
			// The id: instance.revision, or the spec's digest. The running tend
			// validates it (its instance.dir may not be here): when it cannot be loaded
			// here, the id is the file's digest and tend's answer lists the errors.
			id, manual := "", false
			if s, err := loadSpecAs(path, c.StringSlice("var"), "auto", nil); err == nil {
				id, manual = s.Revision(), s.Instance.Activate == spec.ActivateManual
			} else if id, err = spec.FileRevision(path); err != nil {
				return fail(1, "apply: %v", err)
			}
			a := newAPI(c)
			before, _ := a.status()
			q := url.Values{"name": {filepath.Base(path)}}
			if c.Bool("dry-run") {
				q.Set("dry_run", "1")
			}
			body, err := a.send(route.ApplyRevision, id, q.Encode(), data)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				var p status.ApplyPlan
				if err := json.Unmarshal(body, &p); err != nil {
					return fail(1, "apply: bad answer: %v", err)
				}
				writePlan(os.Stdout, p)
				return nil
			}
			fmt.Printf("apply: revision %s installed\n", id)
			if timeout == 0 || manual || before.Revision == id {
				return nil
			}
			// Activated, then replaced by a newer one before the wait saw it ready:
			// the wait ends saying so.
			var prev *status.Time
			for _, r := range before.Revisions {
				if r.ID == id && r.ActivatedAt != nil {
					prev = r.ActivatedAt
				}
			}
			replaced := func(r status.Revision) bool {
				return !r.Active && r.ActivatedAt != nil && (prev == nil || !r.ActivatedAt.Equal(prev.Time))
			}
			return waitSwitched(a, timeout, func(d status.Document) bool { return d.Revision == id }, id, replaced)
		},
	}
}

// writePlan prints a dry run's plan.
func writePlan(w io.Writer, p status.ApplyPlan) {
	fmt.Fprintf(w, "revision %s\n", p.Revision)
	line := func(what string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(w, "  %-9s %s\n", what+":", strings.Join(names, ", "))
		}
	}
	line("start", p.Start)
	var restart []string
	for _, r := range p.Restart {
		restart = append(restart, r.Name+" ("+r.Field+")")
	}
	line("restart", restart)
	line("stop", p.Stop)
	line("keep", p.Keep)
	if p.Reprepare != "" {
		fmt.Fprintf(w, "  re-prepares the instance: %s changed\n", p.Reprepare)
	}
	line("fetch", p.Fetch)
}

// activateCommand is `tend activate ID`.
func activateCommand() *cli.Command {
	return &cli.Command{
		Name:      "activate",
		Usage:     "switch a running tend to an installed revision",
		ArgsUsage: "ID",
		Flags:     append([]cli.Flag{listenFlag, tokenFlag}, waitFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fail(2, "activate: expected a revision ID (usage: tend activate ID)")
			}
			if err := extraArgs(c, 1); err != nil {
				return err
			}
			timeout, err := waitTimeout(c)
			if err != nil {
				return err
			}
			id := c.Args().First()
			a := newAPI(c)
			if _, err := a.call(route.ActivateRevision, id); err != nil {
				return err
			}
			fmt.Printf("activate: switching to %s\n", id)
			if timeout == 0 {
				return nil
			}
			return waitSwitched(a, timeout, func(d status.Document) bool { return d.Revision == id }, id, nil)
		},
	}
}

// rollbackCommand is `tend rollback`.
func rollbackCommand() *cli.Command {
	return &cli.Command{
		Name:  "rollback",
		Usage: "switch a running tend back to its last stable revision",
		Flags: append([]cli.Flag{listenFlag, tokenFlag}, waitFlags()...),
		Action: func(c *cli.Context) error {
			if err := extraArgs(c, 0); err != nil {
				return err
			}
			timeout, err := waitTimeout(c)
			if err != nil {
				return err
			}
			a := newAPI(c)
			before, err := a.status()
			if err != nil {
				return err
			}
			if _, err := a.call(route.Rollback, ""); err != nil {
				return err
			}
			fmt.Printf("rollback: switching from %s\n", before.Revision)
			if timeout == 0 {
				return nil
			}
			return waitSwitched(a, timeout, func(d status.Document) bool { return d.Revision != before.Revision }, "the last stable revision", nil)
		},
	}
}

// activeReady reports whether the active revision has been ready since its
// activation (before, the instance's ready condition may still be the replaced
// containers').
func activeReady(d status.Document) bool {
	for _, r := range d.Revisions {
		if r.Active {
			return r.Ready.True()
		}
	}
	return true // a tend without revisions
}

// waitSwitched polls the status until switched holds and the instance and its
// active revision are ready, for at most timeout (exit 1 saying what it waits for);
// revision what rolled back or failed to install ends the wait at once, and so does
// its replacement by another revision when replaced (if not nil) says so.
func waitSwitched(a *api, timeout time.Duration, switched func(status.Document) bool, what string, replaced func(status.Revision) bool) error {
	var active string
	check := func(d status.Document) (bool, string, error) {
		for _, r := range d.Revisions {
			switch {
			case r.ID != what:
			case r.Ready.Reason == status.ReasonRolledBack:
				return false, "", fmt.Errorf("revision %s was rolled back: %s", what, r.Ready.Message)
			case r.Installed.Reason == status.ReasonInstallFailed:
				return false, "", fmt.Errorf("revision %s failed to install: %s", what, r.Installed.Message)
			case replaced != nil && replaced(r):
				return false, "", fmt.Errorf("revision %s was activated, then revision %s replaced it before it was seen ready", what, d.Revision)
			}
		}
		if switched(d) && d.Ready.True() && activeReady(d) {
			active = d.Revision
			return true, "", nil
		}
		return false, fmt.Sprintf("%s to be active and ready (active: %s, ready: %s %s)", what, d.Revision, d.Ready.Reason, d.Ready.Message), nil
	}
	var failed error
	if _, err := waitGoals(a, timeout, []goal{{name: what, check: check}}, func(_ goal, err error) { failed = err }); err != nil {
		return err
	}
	if failed != nil {
		return fail(1, "%v", failed)
	}
	fmt.Printf("%s: active and ready\n", active)
	return nil
}
