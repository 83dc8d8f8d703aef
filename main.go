// Command tend is an in-container process supervisor: a container's PID 1 or a
// foreground command. See README.md and docs/reference.md; the commands are in cli/.
package main

import (
	"os"

	"github.com/tend-sh/tend/cli"
	_ "github.com/tend-sh/tend/internal/quietlog" // before any package could log at init
)

// version is set at build time with -ldflags "-X main.version=..."; without it
// `tend version` takes the module version from the build info.
var version = "dev"

func main() {
	os.Exit(cli.Main(version, os.Args))
}
