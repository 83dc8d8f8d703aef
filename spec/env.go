package spec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// maxSideFile bounds env files and secrets read by Load.
const maxSideFile = 1 << 20

// envList is an environment being assembled: keys in the order they first appeared,
// the value of the last assignment.
type envList struct {
	keys []string
	vals map[string]string
}

func newEnvList() *envList { return &envList{vals: map[string]string{}} }

func (e *envList) set(k, v string) {
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

func (e *envList) get(k string) (string, bool) {
	v, ok := e.vals[k]
	return v, ok
}

// setEnviron adds KEY=VALUE entries; entries without = are ignored.
func (e *envList) setEnviron(env []string) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			e.set(k, v)
		}
	}
}

// setVars adds spec env vars: literal values or the secrets Load read.
func (e *envList) setVars(vars []EnvVar) {
	for _, v := range vars {
		e.set(v.Name, v.value())
	}
}

// index maps each key to its place in strings().
func (e *envList) index() map[string]int {
	at := make(map[string]int, len(e.keys))
	for i, k := range e.keys {
		at[k] = i
	}
	return at
}

func (e *envList) strings() []string {
	out := make([]string, len(e.keys))
	for i, k := range e.keys {
		out[i] = k + "=" + e.vals[k]
	}
	return out
}

// value is the variable's value for a process: the secret for value_from.
func (v EnvVar) value() string {
	if v.ValueFrom != nil {
		return v.secret
	}
	return v.Value
}

// ProcessEnv is the full environment of a process whose own env list is own (a container's
// or an init container's env): tend's environment, the substitution variables, the
// cgroup limits, env_files, the top-level env, then own; a later assignment wins.
// Each key appears once, at the place it first appeared.
func (s *Spec) ProcessEnv(own []EnvVar) []string {
	return s.envWith(nil, own)
}

// envWith is the base environment with the assignments pre and then own on top. The
// base's entries are shared, not rebuilt: a process that sets nothing of its own
// gets the base itself (every container of an instance of 1000, usually), capped so
// that an append copies it; nobody writes an environment in place.
func (s *Spec) envWith(pre [][2]string, own []EnvVar) []string {
	if len(pre) == 0 && len(own) == 0 {
		return slices.Clip(s.baseEnv)
	}
	out := make([]string, len(s.baseEnv), len(s.baseEnv)+len(pre)+len(own))
	copy(out, s.baseEnv)
	var added map[string]int // keys that are not in the base, at their place in out
	set := func(k, v string) {
		entry := k + "=" + v
		i, ok := s.baseAt[k]
		if !ok {
			i, ok = added[k]
		}
		if ok {
			out[i] = entry
			return
		}
		if added == nil {
			added = map[string]int{}
		}
		added[k] = len(out)
		out = append(out, entry)
	}
	for _, kv := range pre {
		set(kv[0], kv[1])
	}
	for _, v := range own {
		set(v.Name, v.value())
	}
	return out
}

// readEnvFile adds the KEY=VALUE lines of an env file to e. Blank lines and lines
// starting with # are skipped; "export " before a key is allowed; a value wrapped in
// matching single quotes is literal, one in double quotes (or bare) expands $VAR and
// ${VAR} from the keys assigned so far (the base env and earlier lines and files).
//
// The file may be a secret: errors name the file and the line, never its text.
// budget is what expansion may still make of the values of every env file: each line
// may double the last.
func readEnvFile(root, path string, e *envList, budget *int) error {
	data, err := readSmallFile(root, path)
	if err != nil {
		return err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return fmt.Errorf("%s:%d: has a NUL byte", path, bytes.Count(data[:bytes.IndexByte(data, 0)], []byte("\n"))+1)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxSideFile)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return fmt.Errorf("%s:%d: want KEY=VALUE", path, lineNo)
		}
		if !validEnvName(key) {
			return fmt.Errorf("%s:%d: invalid variable name", path, lineNo)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
			e.set(key, value[1:len(value)-1])
			continue
		}
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		value, ok = expandEnv(value, e.get, *budget)
		if !ok {
			return fmt.Errorf("%s:%d: $VAR expansion makes the values larger than %d MiB", path, lineNo, MaxExpanded>>20)
		}
		*budget -= len(value)
		e.set(key, value)
	}
	return sc.Err()
}

// expandEnv expands $NAME and ${NAME} (unset: empty); \$ is a literal $. It stops
// (false) before the result would exceed max bytes: each line may double the last.
func expandEnv(s string, lookup func(string) (string, bool), max int) (string, bool) {
	if !strings.ContainsRune(s, '$') {
		return s, len(s) <= max
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		case s[i] == '$':
			val, n, err := dollar(s[i:], lookup)
			if err != nil || n == 1 { // $( and bad ${...} stay literal in env files
				b.WriteByte('$')
				continue
			}
			if len(val) > max-b.Len() {
				return "", false
			}
			b.WriteString(val)
			i += n - 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), b.Len() <= max
}

// readSecret reads a value_from file: its content without one trailing newline.
func readSecret(root, path string) (string, error) {
	data, err := readSmallFile(root, path)
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("%s has a NUL byte", path)
	}
	s := strings.TrimSuffix(string(data), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}

// readSmallFile reads a regular file of at most maxSideFile bytes (openRegular: a
// FIFO or device is refused without blocking).
func readSmallFile(root, path string) ([]byte, error) {
	f, _, err := openRegular(root, path, "a file")
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	// Fstat's size may be wrong (/proc) or stale: read at most one byte too many.
	data, err := io.ReadAll(io.LimitReader(f, maxSideFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSideFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxSideFile)
	}
	return data, nil
}
