package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/convert"
	"github.com/tend-sh/tend/spec"
)

// formatFlag names the format of the spec file; shared by run, validate and render.
var formatFlag = &cli.StringFlag{
	Name:    "format",
	Usage:   "format of SPEC: " + strings.Join(convert.Formats, "|") + " (auto: by its shape)",
	Value:   convert.Auto,
	EnvVars: []string{"TEND_FORMAT"},
}

// convertCommand is `tend convert [--from FORMAT] FILE`: the tend spec on stdout, the
// warnings on stderr; exit 2 for input it cannot convert.
func convertCommand() *cli.Command {
	return &cli.Command{
		Name:      "convert",
		Usage:     "print a pod_agent, ISS, process-compose, supervisord or Procfile spec as a tend spec",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{&cli.StringFlag{
			Name: "from", Value: convert.Auto,
			Usage: "format of FILE: " + strings.Join(convert.Formats, "|") + " (auto: by its shape)",
		}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fail(2, "convert: expected exactly one FILE argument, got %d (usage: tend convert [--from FORMAT] FILE)", c.NArg())
			}
			path := c.Args().First()
			data, err := spec.ReadFile(path)
			if err != nil {
				return fail(2, "%v", err)
			}
			res, err := convert.Convert(data, filepath.Base(path), c.String("from"), os.Environ())
			if err != nil {
				return convertFailure(path, err)
			}
			if res.Format == convert.Tend {
				// Nothing to convert: a valid tend spec is printed as it is; anything
				// else (no format's shape, or an invalid spec) is input convert
				// cannot convert, with validate's errors.
				if _, err := loadSpecAs(path, nil, c.String("from"), nil); err != nil {
					return specFailure(path, err)
				}
				fmt.Fprintf(os.Stderr, "%s: already a tend spec\n", path)
				_, err := os.Stdout.Write(data)
				return err
			}
			printWarnings(os.Stderr, path, res)
			out, err := res.YAML(filepath.Base(path))
			if err != nil {
				return fail(1, "convert %s: %v", path, err)
			}
			_, err = os.Stdout.Write(out)
			return err
		},
	}
}

// convertFailure prints a converter's errors as a spec's are printed.
func convertFailure(path string, err error) error {
	var ce *convert.Error
	if !errors.As(err, &ce) {
		return fail(2, "%s: %v", path, err)
	}
	errs := &spec.Errors{File: path}
	for _, w := range ce.Errs {
		errs.Fields = append(errs.Fields, &spec.FieldError{Path: w.Path, Line: w.Line, Msg: w.Msg})
	}
	return specFailure(path, errs)
}

// loadSpecAs loads a spec file of any format (convert.Load); report, when not nil,
// receives the conversion of a foreign file (its format and warnings), also when the
// converted spec is invalid.
func loadSpecAs(path string, vars []string, format string, report func(*convert.Result)) (*spec.Spec, error) {
	return loadSpecKeyed(path, vars, format, report, nil)
}

// loadSpecKeyed is loadSpecAs with the key of the revision id's keyed digest (run's:
// the instance's, kept in .tend/).
func loadSpecKeyed(path string, vars []string, format string, report func(*convert.Result), key func(string) []byte) (*spec.Spec, error) {
	opts, err := loadOptions(vars)
	if err != nil {
		return nil, err
	}
	opts.RevisionKey = key
	s, res, err := convert.Load(path, format, opts)
	if res != nil && res.Format != convert.Tend && report != nil {
		report(res)
	}
	return s, err
}

// printWarnings writes the one line naming the format and one line per warning,
// "FILE:LINE: warning: path: message".
func printWarnings(w io.Writer, path string, res *convert.Result) {
	n := len(res.Warnings)
	fmt.Fprintf(w, "%s: %s format, converted to a tend spec (%d warning%s)\n", path, res.Format, n, map[bool]string{true: "", false: "s"}[n == 1])
	for _, wr := range res.Warnings {
		fmt.Fprintf(w, "%s:%d: warning: %s\n", path, wr.Line, wr)
	}
}

// stderrWarnings is the report of validate and render.
func stderrWarnings(path string) func(*convert.Result) {
	return func(res *convert.Result) { printWarnings(os.Stderr, path, res) }
}
