package promtext

import (
	"strings"
	"testing"
)

func TestEscapeLabel(t *testing.T) {
	for in, want := range map[string]string{
		"web":        "web",
		`a"b`:        `a\"b`,
		`back\slash`: `back\\slash`,
		"two\nlines": `two\nlines`,
		`\"` + "\n":  `\\\"\n`,
	} {
		if got := EscapeLabel(in); got != want {
			t.Errorf("EscapeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFamily(t *testing.T) {
	var b strings.Builder
	Family(&b, "tend_x_total", "counter", "Things done.")
	if want := "# HELP tend_x_total Things done.\n# TYPE tend_x_total counter\n"; b.String() != want {
		t.Errorf("Family wrote %q, want %q", b.String(), want)
	}
}
