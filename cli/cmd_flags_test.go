package cli

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every flag answers with the names urfave/cli would give it, and every flag of the
// kinds tend uses is wrapped (one left as it was would cost its regexp runs again).
func TestPlainNamesAreCliNames(t *testing.T) {
	app := newApp()
	for _, c := range app.Commands {
		for _, f := range append(slices.Clone(c.Flags), cli.HelpFlag, cli.VersionFlag) {
			inner := unwrapFlag(f)
			if inner == f {
				t.Errorf("%s: flag %v is not wrapped", c.Name, f.Names())
				continue
			}
			if got, want := f.Names(), inner.Names(); !slices.Equal(got, want) {
				t.Errorf("%s: Names() = %v, urfave/cli's %v", c.Name, got, want)
			}
		}
	}
}
