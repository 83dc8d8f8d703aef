package main

import (
	"os"
	"strings"

	"github.com/tend-sh/tend/spec"
)

// checkRoot refuses to run a spec with a user or group when tend is not root: only
// root can switch users, and every start of those containers would fail.
func checkRoot(s *spec.Spec) error {
	paths := s.NeedsRoot()
	if len(paths) == 0 || os.Geteuid() == 0 {
		return nil
	}
	return fail(1, "run: %s: user and group need tend to run as root (it runs as uid %d)", strings.Join(paths, ", "), os.Geteuid())
}
