// Command tend is an in-container process supervisor: a container's PID 1 or a
// foreground command. See README.md and SPEC.md for the contract.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	_ "github.com/tend-sh/tend/internal/quietlog" // before the metrics package logs at init
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries an exit code out of a command; the message (if any) is printed
// to stderr by main.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// fail returns an exitError with a formatted message.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func newApp() *cli.App {
	return &cli.App{
		Name:                 "tend",
		Usage:                "an in-container process supervisor",
		Version:              version,
		HideVersion:          true,
		EnableBashCompletion: false,
		Commands: []*cli.Command{
			runCommand(),
			validateCommand(),
			renderCommand(),
			convertCommand(),
			statusCommand(),
			controlCommand("restart", "restart a container", true),
			controlCommand("stop", "stop a container and keep it stopped (target_state removed)", true),
			controlCommand("start", "start a stopped container (target_state active)", true),
			controlCommand("reload", "re-read the spec and apply the changes", false),
			controlCommand("shutdown", "stop the instance and exit", false),
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(*cli.Context) error {
					fmt.Println("tend", version)
					return nil
				},
			},
		},
		// Usage errors (unknown flags, missing arguments) exit 2, as SPEC.md §1 asks.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fail(2, "%v", err)
		},
	}
}

func main() {
	err := newApp().Run(os.Args)
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "tend:", ee.msg)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "tend:", err)
	os.Exit(2)
}
