package main

import "github.com/urfave/cli/v2"

// statusCommand is `tend status [--json]`.
func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "query a running tend and print its status",
		Action: func(*cli.Context) error {
			return fail(1, "status: not implemented yet")
		},
	}
}

// controlCommand is one of `tend restart|stop|start NAME`, `tend reload`, `tend shutdown`.
func controlCommand(name, usage string, needsName bool) *cli.Command {
	argsUsage := ""
	if needsName {
		argsUsage = "NAME"
	}
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: argsUsage,
		Action: func(*cli.Context) error {
			return fail(1, "%s: not implemented yet", name)
		},
	}
}
