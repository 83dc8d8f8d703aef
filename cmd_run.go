package main

import "github.com/urfave/cli/v2"

// runCommand is `tend run SPEC`, the main job.
func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run the instance in the foreground (PID 1 capable)",
		ArgsUsage: "SPEC",
		Action: func(*cli.Context) error {
			return fail(1, "run: not implemented yet")
		},
	}
}
