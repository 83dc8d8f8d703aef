package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/spec"
)

// validateCommand is `tend validate SPEC`: exit 0, or 2 listing every error.
func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a spec and print every error with its field path",
		ArgsUsage: "SPEC",
		Flags:     []cli.Flag{varFlag, formatFlag},
		Action: func(c *cli.Context) error {
			path, err := specArg(c)
			if err != nil {
				return err
			}
			if _, err := loadSpecAs(path, c.StringSlice("var"), c.String("format"), stderrWarnings(path)); err != nil {
				return specFailure(path, err)
			}
			fmt.Printf("%s: ok\n", path)
			return nil
		},
	}
}

// renderCommand is `tend render [--grace] SPEC`: the spec after defaults and substitution.
func renderCommand() *cli.Command {
	return &cli.Command{
		Name:      "render",
		Usage:     "print the spec after defaults and {VAR} substitution (secrets redacted)",
		ArgsUsage: "SPEC",
		Flags: []cli.Flag{
			varFlag,
			formatFlag,
			&cli.BoolFlag{Name: "grace", Usage: "print only the shutdown grace period in whole seconds"},
		},
		Action: func(c *cli.Context) error {
			path, err := specArg(c)
			if err != nil {
				return err
			}
			s, err := loadSpecAs(path, c.StringSlice("var"), c.String("format"), stderrWarnings(path))
			if err != nil {
				return specFailure(path, err)
			}
			if c.Bool("grace") {
				return printGrace(path, s)
			}
			out, err := s.Render()
			if err != nil {
				return fail(1, "render %s: %v", path, err)
			}
			_, err = os.Stdout.Write(out)
			return err
		},
	}
}

// specArg is the single SPEC argument of run, validate and render; none or more is
// a usage error (exit 2).
func specArg(c *cli.Context) (string, error) {
	if c.NArg() == 0 {
		return "", fail(2, "%s: expected a SPEC argument (usage: tend %s [flags] SPEC)", c.Command.Name, c.Command.Name)
	}
	return c.Args().First(), extraArgs(c, 1)
}

// loadOptions are the spec.Options of every command: tend's environment, the
// hostname, the cgroup limits and the --var NAME=VALUE list.
func loadOptions(vars []string) (spec.Options, error) {
	opts := spec.Options{Environ: os.Environ(), Limits: cgroup.OwnLimits(), Vars: map[string]string{}}
	for _, v := range vars {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return opts, fmt.Errorf("--var %q: want NAME=VALUE", v)
		}
		opts.Vars[name] = value
	}
	host, err := os.Hostname()
	if err != nil {
		return opts, fmt.Errorf("hostname: %w", err)
	}
	opts.Hostname = host
	return opts, nil
}

// specFailure prints every field error of a spec to stderr, one "SPEC:LINE: path: message"
// per line, and returns the exit-2 error with a count; a one-line error (the file
// cannot be read or parsed) is returned as is.
func specFailure(path string, err error) error {
	var errs *spec.Errors
	if !errors.As(err, &errs) {
		return fail(2, "%v", err)
	}
	fmt.Fprint(os.Stderr, formatSpecErrors(path, errs))
	n := len(errs.Fields)
	return fail(2, "%s: %d error%s", path, n, map[bool]string{true: "", false: "s"}[n == 1])
}

// formatSpecErrors writes one line per field error: "SPEC:LINE: path: message"
// (without LINE when it is unknown).
func formatSpecErrors(path string, errs *spec.Errors) string {
	var b strings.Builder
	for _, f := range errs.Fields {
		if f.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s\n", path, f.Line, f.Error())
		} else {
			fmt.Fprintf(&b, "%s: %s\n", path, f.Error())
		}
	}
	return b.String()
}
