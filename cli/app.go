// Package cli is tend's command line: every command, its flags, and the API
// client the commands use. main.go calls Main. See docs/reference.md "Command line".
package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/route"
)

// version is main.version, set at build time with -ldflags "-X main.version=..."
// and passed to Main; without it versionLine takes the module version from the
// build info.
var version = "dev"

// versionLine is what `tend version` and `tend --version` print: the version and,
// when the build recorded it, the VCS commit.
func versionLine() string {
	info, _ := debug.ReadBuildInfo()
	return formatVersion(version, info)
}

// formatVersion prefers the -X version, then the module version (a `go install
// ...@v1.2.3` build has one), then the VCS commit; it adds the commit and its date
// when the build recorded them (a `go build` in a clone does).
func formatVersion(v string, info *debug.BuildInfo) string {
	var commit, date string
	modified := false
	if info != nil {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				date = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if commit == "" {
		return "tend " + v
	}
	if v == "dev" {
		v = commit[:min(12, len(commit))]
	}
	detail := "commit " + commit
	if date != "" {
		detail += ", " + date
	}
	if modified {
		detail += ", modified"
	}
	return fmt.Sprintf("tend %s (%s)", v, detail)
}

// exitError carries an exit code out of a command; the message (if any) is printed
// to stderr by main.
type exitError struct {
	code  int
	msg   string
	cause error // for errors.As, e.g. a *refusal of the API
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return e.cause }

// fail returns an exitError with a formatted message.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "tend",
		Usage:                "an in-container process supervisor",
		Version:              strings.TrimPrefix(versionLine(), "tend "),
		EnableBashCompletion: false,
		Commands: []*cli.Command{
			runCommand(),
			validateCommand(),
			renderCommand(),
			convertCommand(),
			schemaCommand(),
			completionCommand(),
			statusCommand(),
			describeCommand(),
			logsCommand(),
			controlCommand("restart", "restart containers", route.Restart),
			controlCommand("stop", "stop containers and keep them stopped (target_state removed)", route.Stop),
			controlCommand("start", "start stopped containers (target_state active)", route.Start),
			controlCommand("reload", "re-read the spec and apply the changes", route.Reload),
			controlCommand("shutdown", "stop the instance and exit", route.Shutdown),
			revisionsCommand(),
			applyCommand(),
			activateCommand(),
			rollbackCommand(),
			topCommand(),
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					if err := extraArgs(c, 0); err != nil {
						return err
					}
					fmt.Println(versionLine())
					return nil
				},
			},
		},
		// Usage errors (unknown flags, missing arguments) exit 2 (docs/reference.md "Command line").
		OnUsageError: usageError,
	}
	// --help (added to every command as it runs) and --version too.
	plain := withPlainNames([]cli.Flag{cli.HelpFlag, cli.VersionFlag})
	cli.HelpFlag, cli.VersionFlag = plain[0], plain[1]
	for _, c := range app.Commands {
		c.Flags = withPlainNames(c.Flags)
		c.OnUsageError = usageError
		c.HideHelpCommand = true // no `tend status help`: "help" is an unexpected argument
	}
	return app
}

// Main runs the command line args (os.Args) of the tend built as version v and
// returns the exit code; a command's error is printed to stderr.
func Main(v string, args []string) int {
	version = v
	app := newApp()
	cli.VersionPrinter = func(*cli.Context) { fmt.Println(versionLine()) }
	args, err := commandLine(app, args)
	if err == nil {
		err = app.Run(args)
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "tend:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "tend:", err)
	return 2
}
