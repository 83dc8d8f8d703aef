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

// split is the word splitter behind Argv; lookup resolves $VAR. The loop is the
// splitter's state machine over the bytes of s; quoted text and expansions are
// handled by the words' methods.
func split(s string, lookup func(string) (string, bool)) ([]string, error) {
	var w words
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			w.flush()
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] != '\n' { // backslash-newline is a line continuation
				w.add(s[i : i+1])
			}
		case ch == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote at offset %d", i)
			}
			w.add(s[i+1 : i+1+end])
			i += 1 + end
		case ch == '"':
			n, err := w.doubleQuoted(s[i:], lookup)
			if err != nil {
				return nil, err
			}
			i += n - 1
		case ch == '`':
			return nil, ErrCommandSubstitution
		case ch == '$':
			val, n, err := dollar(s[i:], lookup)
			if err != nil {
				return nil, err
			}
			i += n - 1
			if n == 1 { // a lone $ is literal
				w.add("$")
				continue
			}
			w.expansion(val)
		default:
			w.add(s[i : i+1])
		}
	}
	w.flush()
	return w.list, nil
}

// words are the words split so far and the one being built.
type words struct {
	list []string
	word strings.Builder
	// inWord: the current word exists even if empty (it had quotes or text).
	inWord bool
}

// add appends text to the current word, which exists from then on.
func (w *words) add(text string) {
	w.word.WriteString(text)
	w.inWord = true
}

// flush ends the current word, if there is one.
func (w *words) flush() {
	if w.inWord {
		w.list = append(w.list, w.word.String())
	}
	w.word.Reset()
	w.inWord = false
}

// doubleQuoted adds the "..." at the start of s to the current word: \ escapes only
// $ ` " \ and newline, $ expands, a backquote is refused. It returns how many bytes
// it used, the closing quote included.
func (w *words) doubleQuoted(s string, lookup func(string) (string, bool)) (int, error) {
	w.inWord = true
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
				i++
				if s[i] != '\n' {
					w.word.WriteByte(s[i])
				}
				continue
			}
			w.word.WriteByte(c)
		case '`':
			return 0, ErrCommandSubstitution
		case '$':
			val, n, err := dollar(s[i:], lookup)
			if err != nil {
				return 0, err
			}
			w.word.WriteString(val)
			i += n - 1
		default:
			w.word.WriteByte(c)
		}
	}
	return 0, errors.New("unterminated double quote")
}

// expansion adds the value of an unquoted expansion, split at blanks: its first
// field joins the current word, its last one starts the word that goes on after it.
func (w *words) expansion(val string) {
	fields := strings.Fields(val)
	if len(fields) == 0 {
		if val != "" { // only blanks: a word boundary
			w.flush()
		}
		return
	}
	if startsBlank(val) {
		w.flush()
	}
	for j, f := range fields {
		if j > 0 {
			w.flush()
		}
		w.add(f)
	}
	if endsBlank(val) {
		w.flush()
	}
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
