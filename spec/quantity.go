package spec

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Quantities of docs/reference.md "Cgroups and limits" limits: CPU in cores, memory in bytes, pids as a count. The
// parsers take what YAML decodes into an `any` (an int, a float64 or a string) and return
// errors that say what is wrong with the value; the caller adds the field and line.

// byteUnits are the suffixes of a byte quantity: binary (1024) as Kubernetes writes
// them, and decimal (1000).
var byteUnits = map[string]int64{
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
	"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
}

const byteUnitList = "Ki, Mi, Gi, Ti, K, M, G, T"

// ParseCPU reads a CPU limit in cores: a number (1.5, 2), millicores ("1500m"), or
// porto's form ("1.5c"). It must be above 0 and a whole number of millicores, the
// finest limit Kubernetes writes too.
func ParseCPU(v any) (float64, error) {
	s, err := quantityString(v)
	if err != nil {
		return 0, err
	}
	num, scale := s, big.NewRat(1, 1)
	switch {
	case strings.HasSuffix(s, "m"):
		num, scale = strings.TrimSuffix(s, "m"), big.NewRat(1, 1000)
	case strings.HasSuffix(s, "c"):
		num = strings.TrimSuffix(s, "c")
	}
	r, ok := decimal(num)
	if !ok {
		return 0, fmt.Errorf("%q: not a CPU quantity (use cores as a number, \"1500m\" or \"1.5c\")", s)
	}
	r.Mul(r, scale)
	milli := new(big.Rat).Mul(r, big.NewRat(1000, 1))
	switch {
	case r.Sign() <= 0:
		return 0, fmt.Errorf("%q: must be above 0", s)
	case !milli.IsInt():
		return 0, fmt.Errorf("%q: finer than 1 millicore (0.001)", s)
	}
	cores, _ := r.Float64()
	return cores, nil
}

// FormatCPU renders cores canonically: a plain number, "1.5", "2", "0.25".
func FormatCPU(cores float64) string {
	return strconv.FormatFloat(math.Round(cores*1000)/1000, 'f', -1, 64)
}

// ParseBytes reads a byte quantity: an integer, or a decimal number followed by Ki Mi Gi
// Ti (powers of 1024) or K M G T (powers of 1000). A fraction of a byte ("1.1Ki") is
// rounded up, as Kubernetes does. It must be above 0 and fit an int64.
func ParseBytes(v any) (int64, error) {
	s, err := quantityString(v)
	if err != nil {
		return 0, err
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], s[i:]
	}
	mult := int64(1)
	if unit != "" {
		if mult = byteUnits[unit]; mult == 0 {
			return 0, fmt.Errorf("%q: unknown unit %q (use %s)", s, unit, byteUnitList)
		}
	}
	r, ok := decimal(num)
	if !ok {
		return 0, fmt.Errorf("%q: not a byte quantity (use an integer, or a number with %s)", s, byteUnitList)
	}
	r.Mul(r, big.NewRat(mult, 1))
	n := ceil(r)
	switch {
	case n.Sign() <= 0:
		return 0, fmt.Errorf("%q: must be above 0", s)
	case !n.IsInt64():
		return 0, fmt.Errorf("%q: too large (at most %d bytes)", s, int64(math.MaxInt64))
	}
	return n.Int64(), nil
}

// ParseCount reads a count such as a pids limit: a whole number above 0.
func ParseCount(v any) (int64, error) {
	s, err := quantityString(v)
	if err != nil {
		return 0, err
	}
	if !isDigits(s) {
		return 0, fmt.Errorf("%q: not a whole number", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q: too large (at most %d)", s, int64(math.MaxInt64))
	case n <= 0:
		return 0, fmt.Errorf("%q: must be above 0", s)
	}
	return n, nil
}

// quantityString turns a decoded YAML scalar into the text the parsers read. Floats are
// written exactly (1.5 stays "1.5"; 1e9 becomes "1000000000").
func quantityString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		if strings.HasPrefix(s, "-") {
			return "", fmt.Errorf("%q: must be above 0", s)
		}
		return s, nil
	case int:
		return quantityString(int64(x))
	case int64:
		if x <= 0 {
			return "", fmt.Errorf("%d: must be above 0", x)
		}
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("%v: not a number", x)
		}
		if x <= 0 {
			return "", fmt.Errorf("%v: must be above 0", x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	default:
		return "", fmt.Errorf("%v: a number or a string with a unit is needed, got %T", v, v)
	}
}

// decimal parses "12", "1.5" or ".5" exactly; signs, exponents and fractions like
// "1/2" (which big.Rat would take) are refused.
func decimal(s string) (*big.Rat, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole+frac == "" || (whole != "" && !isDigits(whole)) || (frac != "" && !isDigits(frac)) {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// ceil rounds a non-negative rational up to an integer.
func ceil(r *big.Rat) *big.Int {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
