package cli

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tend-sh/tend/spec"
)

// schemaCommand is `tend schema`: the JSON Schema of the spec, for editors.
func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the JSON Schema (draft 2020-12) of the spec, for editors",
		Action: func(c *cli.Context) error {
			if err := extraArgs(c, 0); err != nil {
				return err
			}
			_, err := os.Stdout.Write(spec.Schema())
			return err
		},
	}
}
