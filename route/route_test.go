package route

import (
	"net/http"
	"testing"
)

// The table's rules: a route that changes something (any method but GET) is an
// owner route, no pattern twice, and URL fills in an escaped name.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range All {
		if r.Method != http.MethodGet && r.Access != Owner {
			t.Errorf("%s changes something but is not an owner route", r.Pattern())
		}
		if seen[r.Pattern()] {
			t.Errorf("%s twice in All", r.Pattern())
		}
		seen[r.Pattern()] = true
	}
	for _, c := range []struct {
		r    Route
		name string
		want string
	}{
		{Status, "", "/v1/status"},
		{Container, "web", "/v1/containers/web"},
		{Restart, "a b/c", "/v1/containers/a%20b%2Fc/restart"},
	} {
		if got := c.r.URL(c.name); got != c.want {
			t.Errorf("%s.URL(%q) = %q, want %q", c.r.Pattern(), c.name, got, c.want)
		}
	}
}
