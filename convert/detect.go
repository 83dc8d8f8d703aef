package convert

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/tend-sh/tend/spec"
	"go.yaml.in/yaml/v3"
)

// Regular expressions are compiled on first use, not at start-up (tend's launch time).
var (
	programSectionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]*\[program:`) })
	procfileLineRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z0-9_-]+):[ \t]*(.*)$`) })
)

// tendKeys are the top-level fields of a tend spec.
var tendKeys = map[string]bool{
	"instance": true, "env": true, "env_files": true, "resources": true,
	"dynamic_resources": true, "init_containers": true, "containers": true,
}

// Detect names the format of a spec file by its shape (docs/reference.md "Foreign formats"): supervisord has
// [program:NAME] sections; a YAML mapping with workloads is pod_agent, with processes
// process-compose, with a tend field tend's own; a list of objects with "@class" is
// ISS; lines of `name: command` are a Procfile (so is any other file named Procfile,
// whatever its lines). Anything else is tend's own format, whose loader explains what
// is wrong with it.
func Detect(data []byte, name string) string {
	if f := topLevelKeys(data); f != "" {
		return f
	}
	if programSectionRe().Match(data) {
		return Supervisord
	}
	if spec.NodeBound(data) > maxParsed {
		return detectLarge(data, name)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil && len(doc.Content) == 1 {
		root := doc.Content[0]
		switch root.Kind {
		case yaml.MappingNode:
			if hasKey(root, "@class") {
				return ISS
			}
			if hasKey(root, "workloads") {
				return PodAgent
			}
			if hasKey(root, "processes") {
				return ProcessCompose
			}
			for i := 0; i+1 < len(root.Content); i += 2 {
				if v := root.Content[i+1]; tendKeys[root.Content[i].Value] && (v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null") {
					return Tend
				}
			}
		case yaml.SequenceNode:
			if len(root.Content) > 0 && root.Content[0].Kind == yaml.MappingNode && hasKey(root.Content[0], "@class") {
				return ISS
			}
		}
	} else if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '[' || t[0] == '{') && bytes.Contains(t, []byte(`"@class"`)) {
		return ISS // broken JSON: the ISS converter names the line
	}
	if procfileName(name) || looksLikeProcfile(data) {
		return Procfile
	}
	return Tend
}

// procfileName: Procfile, Procfile.dev, web.procfile.
func procfileName(name string) bool {
	base := filepath.Base(name)
	return base == "Procfile" || strings.HasPrefix(base, "Procfile.") || strings.HasSuffix(base, ".procfile")
}

// detectLarge tells the format of a file too large to parse just for that (see
// spec.NodeBound) by the words that would decide it: a foreign file that large is refused
// by its converter, which says so; anything else is left to tend's own loader.
func detectLarge(data []byte, name string) string {
	switch {
	case bytes.Contains(data, []byte(`"@class"`)):
		return ISS
	case bytes.Contains(data, []byte("workloads")):
		return PodAgent
	case bytes.Contains(data, []byte("processes")):
		return ProcessCompose
	case procfileName(name) || looksLikeProcfile(data):
		return Procfile
	}
	return Tend
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// looksLikeProcfile: at least one line, and every line that is not blank or a
// comment is `name: command` with a command.
func looksLikeProcfile(data []byte) bool {
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := procfileLineRe().FindStringSubmatch(line)
		if m == nil || strings.TrimSpace(m[2]) == "" {
			return false
		}
		n++
	}
	return n > 0
}

// topLevelKeys tells a YAML file's format by its unindented `key:` lines, without
// parsing it: tend's own specs are told at once. "" when they do not decide.
func topLevelKeys(data []byte) string {
	format := ""
	for line := range bytes.Lines(data) {
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-' || line[0] == '[' {
			continue
		}
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		// A tend field holds a block, a flow collection or an anchor, never a command
		// line (`env: printenv` is a Procfile's).
		rest = bytes.TrimSpace(rest)
		block := len(rest) == 0 || bytes.IndexByte([]byte("[{#&*!|>"), rest[0]) >= 0
		switch k := string(key); {
		case k == "workloads", k == "processes", k == "@class", k == `"@class"`:
			return "" // the parse decides
		case tendKeys[k] && block:
			format = Tend
		}
	}
	return format
}
