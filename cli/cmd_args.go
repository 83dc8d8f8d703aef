package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/spec"
)

// The command line as users type it (docs/reference.md "Command line"): flags before or after the
// positional arguments, `--` ends the flags, and every usage error is one short line
// with a hint and exit 2. urfave/cli stops parsing flags at the first positional
// argument, so commandLine puts each subcommand's arguments in the order it parses.

// commandLine checks the subcommand of args (os.Args) and returns args with that
// subcommand's flags moved before its positional arguments.
func commandLine(app *cli.App, args []string) ([]string, error) {
	at := 1
	for at < len(args) && strings.HasPrefix(args[at], "-") && args[at] != "--" {
		at++ // tend's own flags (--help, --version): urfave reports unknown ones
	}
	if at >= len(args) || args[at] == "--" {
		return args, nil
	}
	name := args[at]
	if name == "help" || name == "h" {
		// `tend help NAME` names a command too.
		if at+1 < len(args) && app.Command(args[at+1]) == nil {
			return nil, unknownCommand(app, args[at+1])
		}
		return args, nil
	}
	cmd := app.Command(name)
	if cmd == nil {
		return nil, unknownCommand(app, name)
	}
	out := append([]string{}, args[:at+1]...)
	return append(out, flagsFirst(cmd.Flags, args[at+1:])...), nil
}

// flagsFirst reorders args: the flags (with the value of each flag that takes one)
// first, then `--` and the positional arguments in their order. A flag it does not
// know (--help, a typo) is taken as a bool flag and left for urfave to judge.
func flagsFirst(flags []cli.Flag, args []string) []string {
	takesValue := map[string]bool{}
	for _, f := range flags {
		v, ok := f.(interface{ TakesValue() bool })
		for _, n := range f.Names() {
			takesValue[n] = ok && v.TakesValue()
		}
	}
	var flagArgs, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case len(a) < 2 || a[0] != '-':
			positional = append(positional, a)
		default:
			flagArgs = append(flagArgs, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(args) {
				i++
				flagArgs = append(flagArgs, args[i])
			}
		}
	}
	if len(positional) == 0 {
		return flagArgs
	}
	return append(append(flagArgs, "--"), positional...)
}

// unknownCommand is the usage error for a command tend does not have.
func unknownCommand(app *cli.App, name string) error {
	var names []string
	for _, c := range app.Commands {
		names = append(names, c.Names()...)
	}
	return fail(2, "unknown command %q%s (tend --help lists the commands)", name, didYouMean(name, names, "%q"))
}

// usageError turns urfave's flag errors into one line with a hint, without the help
// text it would print around them. It serves tend's own flags and every command's.
func usageError(c *cli.Context, err error, isSubcommand bool) error {
	prefix, help := "", "tend --help"
	if isSubcommand {
		prefix, help = c.Command.Name+": ", "tend "+c.Command.Name+" --help"
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range c.Command.Flags {
			for _, n := range f.Names() {
				names = append(names, dashed(n))
			}
		}
		msg = "unknown flag " + dashed(name) + didYouMean(dashed(name), names, "%s")
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = "flag " + dashed(name) + " needs a value"
	}
	return fail(2, "%s%s (%s lists the flags)", prefix, msg, help)
}

// extraArgs is the usage error for positional arguments beyond the first want, or nil.
func extraArgs(c *cli.Context, want int) error {
	if c.NArg() <= want {
		return nil
	}
	return fail(2, "%s: unexpected argument %q (tend %s --help shows the usage)", c.Command.Name, c.Args().Get(want), c.Command.Name)
}

// dashed writes a flag name the way users type it: -n, --listen.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// didYouMean is `; did you mean X?` for the candidate nearest to typed, or "" when
// none is near enough to be a typo of it. A candidate that typed begins (three
// letters or more: "stat" for status) is nearest.
func didYouMean(typed string, candidates []string, format string) string {
	best, bestDistance := "", 0
	for _, c := range candidates {
		d := spec.EditDistance(typed, c)
		if len(typed) >= 3 && strings.HasPrefix(c, typed) {
			d = 0
		}
		if best == "" || d < bestDistance {
			best, bestDistance = c, d
		}
	}
	if best == "" || bestDistance > max(1, len(best)/3) {
		return ""
	}
	return "; did you mean " + fmt.Sprintf(format, best) + "?"
}
