package spec

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCommandSubstitution is returned for $(...) or backticks outside single quotes.
var ErrCommandSubstitution = errors.New("command substitution is not supported")

// Argv turns a command into an argument vector. A list is used as is. A string is split
// like a POSIX shell word list: blanks separate words; single quotes keep everything
// literal; double quotes keep blanks and expand $VAR; a backslash quotes the next
// character (inside double quotes only before $ ` " \ and newline). $VAR and ${VAR}
// expand from env (KEY=VALUE, the last one wins; an unset one is empty) outside single
// quotes, and an unquoted expansion is split into words at blanks, as a shell would.
// Nothing else is special: no globbing, no tilde, no redirection or pipes (| and > are
// literal arguments), and $(...) or backticks are an error, because the command is
// never run by a shell.
func Argv(cmd Command, env []string) ([]string, error) {
	if cmd.IsList {
		if len(cmd.List) == 0 || cmd.List[0] == "" {
			return nil, errors.New("empty command")
		}
		return append([]string(nil), cmd.List...), nil
	}
	words, err := split(cmd.String, envLookup(env))
	if err != nil {
		return nil, err
	}
	if len(words) == 0 || words[0] == "" {
		return nil, fmt.Errorf("empty command after expansion: %q", cmd.String)
	}
	return words, nil
}

// envLookup finds a variable in a KEY=VALUE list; the last occurrence wins.
func envLookup(env []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

// split is the word splitter behind Argv; lookup resolves $VAR.
func split(s string, lookup func(string) (string, bool)) ([]string, error) {
	var (
		words []string
		word  strings.Builder
		// inWord: the current word exists even if empty (it had quotes or text).
		inWord bool
	)
	flush := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			flush()
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] != '\n' { // backslash-newline is a line continuation
				word.WriteByte(s[i])
				inWord = true
			}
		case ch == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote at offset %d", i)
			}
			word.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += 1 + end
		case ch == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				switch c {
				case '\\':
					if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
						i++
						if s[i] != '\n' {
							word.WriteByte(s[i])
						}
						continue
					}
					word.WriteByte(c)
				case '`':
					return nil, ErrCommandSubstitution
				case '$':
					val, n, err := dollar(s[i:], lookup)
					if err != nil {
						return nil, err
					}
					word.WriteString(val)
					i += n - 1
				default:
					word.WriteByte(c)
				}
			}
			if !closed {
				return nil, errors.New("unterminated double quote")
			}
		case ch == '`':
			return nil, ErrCommandSubstitution
		case ch == '$':
			val, n, err := dollar(s[i:], lookup)
			if err != nil {
				return nil, err
			}
			i += n - 1
			if n == 1 { // a lone $ is literal
				word.WriteByte('$')
				inWord = true
				continue
			}
			// An unquoted expansion is split at blanks: its first field joins the
			// current word, its last one starts the word that goes on after it.
			fields := strings.Fields(val)
			if len(fields) == 0 {
				if val != "" { // only blanks: a word boundary
					flush()
				}
				continue
			}
			if startsBlank(val) {
				flush()
			}
			for j, f := range fields {
				if j > 0 {
					flush()
				}
				word.WriteString(f)
				inWord = true
			}
			if endsBlank(val) {
				flush()
			}
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	return words, nil
}

func startsBlank(s string) bool { return s != "" && strings.IndexByte(" \t\n", s[0]) >= 0 }
func endsBlank(s string) bool   { return s != "" && strings.IndexByte(" \t\n", s[len(s)-1]) >= 0 }

// dollar expands the $... at the start of s: $NAME, ${NAME}. It returns the value and
// how many bytes it used; 1 with an empty value means a literal $ ($1, $@, "$ ", end).
func dollar(s string, lookup func(string) (string, bool)) (string, int, error) {
	if len(s) < 2 {
		return "$", 1, nil
	}
	switch c := s[1]; {
	case c == '(':
		return "", 0, ErrCommandSubstitution
	case c == '{':
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0, errors.New("unterminated ${")
		}
		name := s[2:end]
		if !validEnvName(name) {
			return "", 0, fmt.Errorf("bad substitution ${%s} (only ${NAME} is supported)", name)
		}
		val, _ := lookup(name)
		return val, end + 1, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		n := 2
		for n < len(s) && (s[n] == '_' || s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= '0' && s[n] <= '9') {
			n++
		}
		val, _ := lookup(s[1:n])
		return val, n, nil
	}
	return "$", 1, nil
}
