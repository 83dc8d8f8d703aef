// Package promtext writes what VictoriaMetrics/metrics leaves to its caller in the
// Prometheus text format: one HELP (with text) and TYPE pair per metric family, and
// escaped label values. The samples themselves are written by that library.
package promtext

import (
	"io"
	"strings"
)

// Family writes the HELP and TYPE lines that open metric family name; every sample of
// the family must follow it before another family starts. help must be one line.
func Family(w io.Writer, name, typ, help string) {
	io.WriteString(w, "# HELP "+name+" "+help+"\n# TYPE "+name+" "+typ+"\n")
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// EscapeLabel escapes a label value for use between double quotes.
func EscapeLabel(value string) string { return labelEscaper.Replace(value) }
