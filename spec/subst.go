package spec

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
)

// Names of the instance variables (docs/reference.md "Substitution").
const (
	VarName     = "BSCONFIG_INAME"
	VarDir      = "BSCONFIG_IDIR"
	VarHost     = "BSCONFIG_IHOST"
	VarPort     = "BSCONFIG_IPORT"
	varPortPlus = "BSCONFIG_IPORT_PLUS_"
)

// variables are the {NAME} substitution variables of one spec.
type variables struct {
	fixed map[string]string // BSCONFIG_* (but the _PLUS_N ones), instance.vars, --var
	port  Opt[int]          // instance.port, for BSCONFIG_IPORT_PLUS_N
	used  map[string]string // BSCONFIG_IPORT_PLUS_N names the spec used, exported too
	size  int               // bytes the substituted fields hold so far, at most MaxExpanded
	// revisionDir: the fields of an init container with at: install are being
	// substituted, where {REVISION_DIR} is RevisionDirMark.
	revisionDir bool
}

// MaxExpanded bounds what substitution makes of a spec's fields together: a 600 KB
// spec whose variables are used many times must not become gigabytes in memory.
const MaxExpanded = 16 << 20

// errTooLarge: substitution would take the spec past MaxExpanded.
var errTooLarge = fmt.Errorf("{VAR} substitution makes the spec larger than %d MiB", MaxExpanded>>20)

// newVariables builds the variables; later sources win: BSCONFIG_*, instance.vars, --var.
// Names of instance.vars and --var must be environment variable names and must not
// redefine a BSCONFIG_I* variable (those come from the instance section).
func newVariables(s *Spec, hostname string, cli map[string]string, c *collector) *variables {
	v := &variables{fixed: map[string]string{}, port: s.Instance.Port, used: map[string]string{}}
	v.fixed[VarName] = s.Instance.Name
	v.fixed[VarDir] = s.Instance.Dir
	v.fixed[VarHost] = hostname
	if s.Instance.Port.IsSet() {
		v.fixed[VarPort] = strconv.Itoa(s.Instance.Port.Get())
	}
	add := func(src map[string]string, path func(string) string, from string) {
		for _, name := range sortedKeys(src) {
			switch {
			case !validEnvName(name):
				c.addf(path(name), "invalid variable name %q (letters, digits and _, not starting with a digit)", name)
				continue
			case isInstanceVar(name):
				c.addf(path(name), "%s is set from the instance section and cannot be redefined %s", name, from)
				continue
			}
			v.fixed[name] = src[name]
		}
	}
	add(s.Instance.Vars, func(n string) string { return join("instance.vars", n) }, "in instance.vars")
	add(cli, func(n string) string { return "--var " + n }, "with --var")
	return v
}

func isInstanceVar(name string) bool {
	switch name {
	case VarName, VarDir, VarHost, VarPort:
		return true
	}
	return strings.HasPrefix(name, varPortPlus)
}

// lookup resolves a name, BSCONFIG_IPORT_PLUS_N included.
func (v *variables) lookup(name string) (string, bool) {
	if name == VarRevisionDir && v.revisionDir {
		return RevisionDirMark, true
	}
	if val, ok := v.fixed[name]; ok {
		return val, true
	}
	n, ok := plusN(name)
	if !ok || !v.port.IsSet() {
		return "", false
	}
	val := strconv.Itoa(v.port.Get() + n)
	v.used[name] = val
	return val, true
}

// plusN parses BSCONFIG_IPORT_PLUS_N with N >= 1 (decimal, no sign, no leading zero).
func plusN(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, varPortPlus)
	if !ok || digits == "" || digits[0] == '0' || len(digits) > 5 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || strings.ContainsAny(digits, "+-") {
		return 0, false
	}
	return n, true
}

// all is every variable with a value: the fixed ones and the _PLUS_N ones the spec used.
func (v *variables) all() map[string]string {
	out := maps.Clone(v.fixed)
	maps.Copy(out, v.used)
	return out
}

// substitute replaces {NAME} in s as Python's str.format does with named fields only:
// {{ and }} are literal braces; a lone { or } and an unknown name are errors. Once
// the fields substituted so far hold MaxExpanded bytes, it stops and says
// errTooLarge, then and for every later field, without building the string.
func (v *variables) substitute(s string) (string, error) {
	out, err := v.expand(s)
	if err == nil && len(out) > MaxExpanded-v.size {
		err = errTooLarge
	}
	if err != nil {
		if err == errTooLarge {
			v.size = MaxExpanded + 1
		}
		return "", err
	}
	v.size += len(out)
	return out, nil
}

func (v *variables) expand(s string) (string, error) {
	v.noteShellUses(s)
	if !strings.ContainsAny(s, "{}") {
		return s, nil
	}
	budget := MaxExpanded - v.size
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '{':
			if i+1 < len(s) && s[i+1] == '{' {
				b.WriteByte('{')
				i++
				continue
			}
			end := strings.IndexAny(s[i+1:], "{}")
			if end < 0 || s[i+1+end] == '{' {
				return "", fmt.Errorf("unmatched '{' at offset %d (write '{{' for a literal brace)", i)
			}
			name := s[i+1 : i+1+end]
			if name == "" {
				return "", fmt.Errorf("empty variable name {} at offset %d (write '{{}}' for literal braces)", i)
			}
			val, ok := v.lookup(name)
			if !ok && i > 0 && s[i-1] == '$' {
				// A shell's ${NAME}, as in sh -c 'echo ${HOME}'.
				return "", fmt.Errorf("unknown variable {%s} (write ${{%s}} for a literal ${%s}, or $%s)", name, name, name, name)
			}
			if !ok && (i > 0 && strings.ContainsRune("%#@", rune(s[i-1])) || strings.ContainsAny(name, " $.:,;'\"()")) {
				// Another tool's placeholder: curl's %{http_code}, awk's {print $1}.
				prefix := s[i-min(i, 1) : i]
				if !strings.ContainsAny(prefix, "%#@") {
					prefix = ""
				}
				return "", fmt.Errorf("unknown variable {%s} (write %s{{%s}} for a literal %s{%s})", name, prefix, name, prefix, name)
			}
			if !ok {
				return "", fmt.Errorf("unknown variable {%s}%s", name, v.hint(name))
			}
			if len(val) > budget-b.Len() {
				return "", errTooLarge
			}
			b.WriteString(val)
			i += 1 + end
		case '}':
			if i+1 < len(s) && s[i+1] == '}' {
				b.WriteByte('}')
				i++
				continue
			}
			return "", fmt.Errorf("single '}' at offset %d (write '}}' for a literal brace)", i)
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), nil
}

// noteShellUses counts a BSCONFIG_IPORT_PLUS_N that s names as $NAME or ${NAME}
// as used, like {NAME}: such a name expands from the process's environment
// (docs/reference.md "Commands"), which holds the PLUS_N variables the spec uses.
func (v *variables) noteShellUses(s string) {
	for {
		i := strings.Index(s, varPortPlus)
		if i < 0 {
			return
		}
		end := i + len(varPortPlus)
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		shell := i > 0 && s[i-1] == '$' || i > 1 && s[i-2:i] == "${"
		if shell && (end == len(s) || !isNameByte(s[end])) {
			v.lookup(s[i:end]) // registers it when N is valid and instance.port set
		}
		s = s[end:]
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// hint says why a variable is unknown, or what was probably meant.
func (v *variables) hint(name string) string {
	if name == VarRevisionDir {
		return " (only in an init container with at: install)"
	}
	if name == VarPort || strings.HasPrefix(name, varPortPlus) {
		if _, ok := plusN(name); name == VarPort || ok {
			return " (instance.port is not set)"
		}
		return " (BSCONFIG_IPORT_PLUS_N takes a whole N >= 1)"
	}
	names := sortedKeys(v.fixed)
	if v.port.IsSet() {
		names = append(names, varPortPlus+"1")
	}
	if guess := closest(name, names); guess != "" {
		return fmt.Sprintf(" (did you mean {%s}?)", guess)
	}
	return " (define it in instance.vars or with --var)"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// closest is the candidate nearest to s by edit distance (case-insensitive), when it
// is near enough to be a typo; "" otherwise.
func closest(s string, candidates []string) string {
	best, bestDist := "", 3
	if len(s) > 64 {
		return ""
	}
	for _, c := range candidates {
		d := EditDistance(strings.ToLower(s), strings.ToLower(c))
		if d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	if bestDist > 2 || bestDist >= len(s) {
		return ""
	}
	return best
}

// Closest is the candidate nearest to s when it is near enough to be a typo, ""
// otherwise: the "did you mean" of a name the user typed (tend restart wbe).
func Closest(s string, candidates []string) string { return closest(s, candidates) }

// EditDistance is the Levenshtein distance between a and b (bytes: names are ASCII);
// the CLI's "did you mean" uses it too.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// validEnvName: letters, digits and underscores, not starting with a digit.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
