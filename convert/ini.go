package convert

import (
	"strings"
)

// iniSection is one [section] of an INI file, keys in file order.
type iniSection struct {
	name string
	line int
	keys []iniKey
}

type iniKey struct {
	name, value string
	line        int
}

func (s *iniSection) src() Source { return Source{Path: "[" + s.name + "]", Line: s.line} }

func (s *iniSection) keySrc(k iniKey) Source {
	return Source{Path: "[" + s.name + "]." + k.name, Line: k.line}
}

// parseINI reads INI the way supervisord's (Python's) parser does: [section]
// headers, `key = value` or `key: value`, comments starting with ; or # (inline only
// after whitespace and ;), and indented lines continuing a value.
func parseINI(data []byte, c *conv) []*iniSection {
	var sections []*iniSection
	var cur *iniSection
	// Lines of the sections and of the current section's keys, for duplicates: maps,
	// as a 1 MB file can have 100,000 of either.
	sectionLines, keyLines := map[string]int{}, map[string]int{}
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimRight(raw, "\r")
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == ';' || trimmed[0] == '#' {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && cur != nil && len(cur.keys) > 0 {
			k := &cur.keys[len(cur.keys)-1]
			k.value = strings.TrimSpace(k.value + "\n" + stripInlineComment(trimmed))
			continue
		}
		if trimmed[0] == '[' {
			end := strings.IndexByte(trimmed, ']')
			if end < 0 {
				c.errorf(Source{Line: n}, "section header %q has no closing ]", trimmed)
				return nil
			}
			name := strings.TrimSpace(trimmed[1:end])
			if first, ok := sectionLines[name]; ok {
				c.errorf(Source{Path: "[" + name + "]", Line: n}, "duplicate section (first at line %d)", first)
				return nil
			}
			sectionLines[name] = n
			clear(keyLines)
			cur = &iniSection{name: name, line: n}
			sections = append(sections, cur)
			continue
		}
		sep := strings.IndexAny(trimmed, "=:")
		if sep <= 0 {
			c.errorf(Source{Line: n}, "want key=value, got %q", trimmed)
			return nil
		}
		if cur == nil {
			c.errorf(Source{Line: n}, "key %q before any [section]", strings.TrimSpace(trimmed[:sep]))
			return nil
		}
		key := strings.ToLower(strings.TrimSpace(trimmed[:sep]))
		if first, ok := keyLines[key]; ok {
			c.errorf(Source{Path: "[" + cur.name + "]." + key, Line: n}, "duplicate key (first at line %d)", first)
			return nil
		}
		keyLines[key] = n
		cur.keys = append(cur.keys, iniKey{name: key, value: stripInlineComment(strings.TrimSpace(trimmed[sep+1:])), line: n})
	}
	return sections
}

// stripInlineComment drops " ;comment" (supervisord's inline comment form).
func stripInlineComment(v string) string {
	for i := 1; i < len(v); i++ {
		if v[i] == ';' && (v[i-1] == ' ' || v[i-1] == '\t') {
			return strings.TrimSpace(v[:i])
		}
	}
	return v
}
