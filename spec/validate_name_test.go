package spec

import (
	"regexp"
	"strings"
	"testing"
)

// validName is the regexp of container names (docs/reference.md "Fields and defaults"), written out; it must agree with it.
func TestValidNameMatchesRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	cases := []string{"", "a", "A", "0", "_a", "-a", ".a", "a_b-c.d", "a b", "a/b", "é", "aé",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "a\n", "web-1", "x..y", "\x00"}
	for _, c := range cases {
		if got, want := validName(c), re.MatchString(c); got != want {
			t.Errorf("validName(%q) = %v, regexp says %v", c, got, want)
		}
	}
}

func FuzzValidName(f *testing.F) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	for _, s := range []string{"a", "a-b", "", "-", strings.Repeat("z", 63)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validName(s) != re.MatchString(s) {
			t.Errorf("validName(%q) = %v, regexp disagrees", s, validName(s))
		}
	})
}
