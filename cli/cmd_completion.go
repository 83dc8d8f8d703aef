package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/convert"
)

// completionShells are the shells `tend completion` writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

// completionCommand is `tend completion bash|zsh|fish`: a completion script made
// from the commands and flags of the app, so it cannot drift from them.
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "SHELL",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fail(2, "completion: expected a SHELL argument (%s)", strings.Join(completionShells, ", "))
			}
			if err := extraArgs(c, 1); err != nil {
				return err
			}
			cmds := completionCommands(c.App)
			switch shell := c.Args().First(); shell {
			case "bash":
				writeBash(os.Stdout, cmds)
			case "zsh":
				writeZsh(os.Stdout, cmds)
			case "fish":
				writeFish(os.Stdout, cmds)
			default:
				return fail(2, "completion: unknown shell %q (%s)", shell, strings.Join(completionShells, ", "))
			}
			return nil
		},
	}
}

// complCommand is one command as a completion script knows it.
type complCommand struct {
	name, usage string
	flags       []complFlag
	files       bool // its arguments are files (SPEC, FILE)
}

type complFlag struct {
	name   string // "--listen" or "-w"
	usage  string
	value  bool     // takes a value
	values []string // the values it takes, when there is a fixed set
	many   bool     // repeatable
}

// flagValues are the fixed values of flags.
var flagValues = map[string][]string{
	"log-format": {"auto", "console", "json"},
	"log-level":  {"debug", "info", "warn", "error"},
	"format":     convert.Formats,
	"from":       convert.Formats,
}

func completionCommands(app *cli.App) []complCommand {
	var cmds []complCommand
	for _, c := range app.Commands {
		if c.Hidden || c.Name == "help" { // urfave/cli's own, added when the app runs
			continue
		}
		cc := complCommand{name: c.Name, usage: c.Usage, files: strings.Contains(c.ArgsUsage, "SPEC") || strings.Contains(c.ArgsUsage, "FILE")}
		for _, f := range c.Flags {
			_, isBool := unwrapFlag(f).(*cli.BoolFlag)
			_, many := unwrapFlag(f).(*cli.StringSliceFlag)
			usage := ""
			if df, ok := f.(cli.DocGenerationFlag); ok {
				usage = df.GetUsage()
			}
			for _, name := range f.Names() {
				dash := "--"
				if len(name) == 1 {
					dash = "-"
				}
				cc.flags = append(cc.flags, complFlag{name: dash + name, usage: usage, value: !isBool, values: flagValues[f.Names()[0]], many: many})
			}
		}
		cmds = append(cmds, cc)
	}
	return cmds
}

func writeBash(w io.Writer, cmds []complCommand) {
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	fmt.Fprintf(w, `# bash completion for tend: source <(tend completion bash), or save it as
# /etc/bash_completion.d/tend.
_tend() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "%s --help --version" -- "$cur"))
        return
    fi
    case "$prev" in
`, strings.Join(names, " "))
	done := map[string]bool{}
	for _, c := range cmds {
		for _, f := range c.flags {
			if len(f.values) > 0 && !done[f.name] {
				done[f.name] = true
				fmt.Fprintf(w, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", f.name, strings.Join(f.values, " "))
			}
		}
	}
	fmt.Fprintf(w, "    esac\n    local flags=\n    case \"${COMP_WORDS[1]}\" in\n")
	for _, c := range cmds {
		var flags []string
		for _, f := range c.flags {
			flags = append(flags, f.name)
		}
		if c.name == "completion" {
			fmt.Fprintf(w, "    completion) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(completionShells, " "))
			continue
		}
		fmt.Fprintf(w, "    %s) flags=%q ;;\n", c.name, strings.Join(append(flags, "--help"), " "))
	}
	fmt.Fprint(w, `    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    fi
    # Otherwise nothing: complete -o default completes file names.
}
complete -o default -F _tend tend
`)
}

func writeZsh(w io.Writer, cmds []complCommand) {
	fmt.Fprint(w, "#compdef tend\n# zsh completion for tend: save it as _tend in a directory of $fpath, or\n# source <(tend completion zsh) after compinit.\n_tend() {\n    local -a commands\n    commands=(\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "        %s\n", zshQuote(c.name+":"+c.usage))
	}
	fmt.Fprint(w, "    )\n    if (( CURRENT == 2 )); then\n        _describe -t commands 'tend command' commands\n        return\n    fi\n    case $words[2] in\n")
	for _, c := range cmds {
		specs := []string{}
		for _, f := range c.flags {
			spec := f.name + "[" + zshDesc(f.usage) + "]"
			if f.many {
				spec = "*" + spec
			}
			switch {
			case len(f.values) > 0:
				spec += ":value:(" + strings.Join(f.values, " ") + ")"
			case f.value:
				spec += ":value:"
			}
			specs = append(specs, zshQuote(spec))
		}
		switch {
		case c.name == "completion":
			specs = append(specs, zshQuote("1:shell:("+strings.Join(completionShells, " ")+")"))
		case c.files:
			specs = append(specs, zshQuote("*:file:_files"))
		}
		fmt.Fprintf(w, "    %s) _arguments %s ;;\n", c.name, strings.Join(specs, " "))
	}
	fmt.Fprint(w, "    esac\n}\nif [ \"$funcstack[1]\" = _tend ]; then\n    _tend \"$@\"\nelse\n    compdef _tend tend\nfi\n")
}

func writeFish(w io.Writer, cmds []complCommand) {
	fmt.Fprint(w, "# fish completion for tend: tend completion fish > ~/.config/fish/completions/tend.fish\ncomplete -c tend -f\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c tend -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.usage))
	}
	for _, c := range cmds {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		if c.files {
			fmt.Fprintf(w, "complete -c tend -n %s -F\n", cond)
		}
		if c.name == "completion" {
			fmt.Fprintf(w, "complete -c tend -n %s -a %s\n", cond, fishQuote(strings.Join(completionShells, " ")))
		}
		for _, f := range c.flags {
			opt := "-l " + strings.TrimPrefix(f.name, "--")
			if !strings.HasPrefix(f.name, "--") {
				opt = "-s " + strings.TrimPrefix(f.name, "-")
			}
			switch {
			case len(f.values) > 0:
				opt += " -x -a " + fishQuote(strings.Join(f.values, " "))
			case f.value:
				opt += " -r"
			}
			fmt.Fprintf(w, "complete -c tend -n %s %s -d %s\n", cond, opt, fishQuote(f.usage))
		}
	}
}

// zshDesc is a description inside a zsh [...] spec: no brackets or colons.
func zshDesc(s string) string {
	return strings.NewReplacer("[", "(", "]", ")", ":", " ").Replace(s)
}

// zshQuote and fishQuote single-quote s for the shell.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}
