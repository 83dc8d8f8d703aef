package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/tend-sh/tend/spec"
)

// checkRoot refuses a spec with a user or group when tend is not root, at start and
// on reload: only root can switch users, and every start of those containers would
// fail.
func checkRoot(s *spec.Spec) error {
	paths := s.NeedsRoot()
	if len(paths) == 0 || os.Geteuid() == 0 {
		return nil
	}
	return fmt.Errorf("%s: user and group need tend to run as root (it runs as uid %d)", strings.Join(paths, ", "), os.Geteuid())
}
