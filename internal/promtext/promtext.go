// Package promtext writes tend's metrics in the Prometheus text format (version
// 0.0.4): one HELP (with text) and TYPE pair per metric family, samples, escaped
// label values, and the few live series tend keeps (counters and le-bucket
// histograms in a Set).
//
// It replaces an exposition library whose package initialisation alone (it reads the
// runtime's metric descriptions and the cgroup's PSI files, whether /metrics is ever
// scraped or not) cost every tend launch about 0.4 ms before its first container
// (docs/design.md "Dependencies").
package promtext

import (
	"io"
	"strconv"
	"strings"
)

// Family writes the HELP and TYPE lines that open metric family name; every sample of
// the family must follow it before another family starts. help must be one line.
func Family(w io.Writer, name, typ, help string) {
	io.WriteString(w, "# HELP "+name+" "+help+"\n# TYPE "+name+" "+typ+"\n")
}

// Uint writes one sample line: series (a name with its labels, if any) and v.
func Uint(w io.Writer, series string, v uint64) {
	io.WriteString(w, series+" "+strconv.FormatUint(v, 10)+"\n")
}

// Float writes one sample line with a float value, in the shortest form that reads
// back as v (a whole number without a decimal point).
func Float(w io.Writer, series string, v float64) {
	io.WriteString(w, series+" "+strconv.FormatFloat(v, 'g', -1, 64)+"\n")
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// EscapeLabel escapes a label value for use between double quotes.
func EscapeLabel(value string) string { return labelEscaper.Replace(value) }
