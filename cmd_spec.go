package main

import "github.com/urfave/cli/v2"

// validateCommand is `tend validate SPEC`: exit 0, or 2 listing every error.
func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a spec and print every error with its field path",
		ArgsUsage: "SPEC",
		Action: func(*cli.Context) error {
			return fail(1, "validate: not implemented yet")
		},
	}
}

// renderCommand is `tend render SPEC`: the spec after defaults and substitution.
func renderCommand() *cli.Command {
	return &cli.Command{
		Name:      "render",
		Usage:     "print the spec after defaults and {VAR} substitution (secrets redacted)",
		ArgsUsage: "SPEC",
		Action: func(*cli.Context) error {
			return fail(1, "render: not implemented yet")
		},
	}
}
