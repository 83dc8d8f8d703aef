package convert

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tend-sh/tend/spec"
)

// node is a YAML node of a foreign file with its path in that file's terms.
type node struct {
	n    *yaml.Node
	path string
}

func (y node) src() Source { return Source{Path: y.path, Line: y.n.Line} }

// parseYAML parses one YAML (or JSON) document; a syntax error is recorded with its
// line and ok is false.
func parseYAML(data []byte, c *conv) (node, bool) {
	if n := spec.NodeBound(data); n > maxParsed {
		c.errorf(Source{Line: 1}, "too large to convert: up to %d YAML nodes (at most %d)", n, maxNodes)
		return node{}, false
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.errorf(Source{Line: 1}, "no YAML document")
		} else {
			line := yamlErrorLine(err)
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", line))
			c.errorf(Source{Line: line}, "%s", strings.ReplaceAll(msg, "\n", "; "))
		}
		return node{}, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		c.errorf(Source{Line: extra.Line}, "more than one YAML document")
		return node{}, false
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if err := checkExpanded(root); err != nil {
		c.errorf(Source{Line: 1}, "%v", err)
		return node{}, false
	}
	return node{n: resolve(root)}, true
}

// Bounds on what a converter walks, so that no file under spec.MaxFileSize takes more
// than a few tens of MB: the walk follows aliases, and what it builds (a tend spec
// written out and read again) costs some KB per node. A real file has a few hundred
// nodes.
const (
	maxNodes = 8_000 // nodes of the document, aliases expanded
	maxDepth = 64    // nesting, aliases followed
)

// maxParsed bounds spec.NodeBound of a file parsed to convert it (or to tell its format):
// parsing costs some hundred bytes a node, and a 1 MB file can hold 500,000 ("[a,a,...").
const maxParsed = 100_000

// checkExpanded counts the nodes a walk of root visits, following every alias, before
// anything is built from them: a few aliases can stand for millions of nodes (a
// billion laughs). yaml.v3's decoder refuses "excessive aliasing" by the ratio of
// alias-driven nodes to all; a converter builds a spec per node, so a fixed cap on
// the expanded count bounds its memory whatever the ratio. Counts are memoised per
// node, so this is linear in the parsed document.
func checkExpanded(root *yaml.Node) error {
	memo := map[*yaml.Node]int{}
	open := map[*yaml.Node]bool{} // on the current path: an alias back to one is a cycle
	var count func(n *yaml.Node, depth int) (int, error)
	count = func(n *yaml.Node, depth int) (int, error) {
		if depth > maxDepth {
			return 0, fmt.Errorf("line %d: nested deeper than %d levels (aliases followed)", n.Line, maxDepth)
		}
		if v, ok := memo[n]; ok {
			return v, nil
		}
		if open[n] {
			return 0, fmt.Errorf("line %d: an alias refers to a node that contains it", n.Line)
		}
		open[n] = true
		defer delete(open, n)
		children, total := n.Content, 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			children, total = []*yaml.Node{n.Alias}, 0
		}
		for _, child := range children {
			v, err := count(child, depth+1)
			if err != nil {
				return 0, err
			}
			if total += v; total > maxNodes {
				return 0, sizeError(root)
			}
		}
		memo[n] = total
		return total, nil
	}
	_, err := count(root, 0)
	return err
}

// sizeError says why a document is too large: its aliases, when the file itself has
// fewer nodes than the cap.
func sizeError(root *yaml.Node) error {
	source := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) { // aliases not followed: each parsed node once
		source++
		for _, child := range n.Content {
			walk(child)
		}
	}
	walk(root)
	if source <= maxNodes {
		return fmt.Errorf("excessive aliasing: more than %d nodes once aliases are expanded, from %d in the file", maxNodes, source)
	}
	return fmt.Errorf("too large to convert: %d nodes (at most %d)", source, maxNodes)
}

// yamlErrorLine finds "line N" in a go-yaml error.
func yamlErrorLine(err error) int {
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		j := i + 5
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(msg[i+5 : j]); err == nil {
			return n
		}
	}
	return 0
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 64; i++ {
		n = n.Alias
	}
	return n
}

func (y node) isNull() bool {
	return y.n.Kind == yaml.ScalarNode && y.n.ShortTag() == "!!null"
}

// field is one key of a mapping and its value.
type field struct {
	key string
	val node
}

// fields lists a mapping's keys in order, YAML merge keys (<<) expanded (a key given
// explicitly wins); anything but a mapping is an error.
func (c *conv) fields(y node) []field {
	if y.n.Kind != yaml.MappingNode {
		if !y.isNull() {
			c.errorf(y.src(), "must be a mapping, got %s", spec.DescribeNode(y.n))
		}
		return nil
	}
	var out, merged []field
	seen := map[string]bool{}
	for i := 0; i+1 < len(y.n.Content); i += 2 {
		k, v := resolve(y.n.Content[i]), resolve(y.n.Content[i+1])
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			sources := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				sources = v.Content
			}
			for _, s := range sources {
				merged = append(merged, c.fields(node{n: resolve(s), path: y.path})...)
			}
			continue
		}
		if seen[k.Value] {
			c.errorf(Source{Path: join(y.path, k.Value), Line: k.Line}, "duplicate key")
			continue
		}
		seen[k.Value] = true
		val := node{n: v, path: join(y.path, k.Value)}
		if v.Line == 0 || v.Kind != yaml.ScalarNode {
			// Point at the key: a nested block starts on the next line.
			val.n = withLine(v, k.Line)
		}
		out = append(out, field{key: k.Value, val: val})
	}
	for _, f := range merged {
		if !seen[f.key] {
			seen[f.key] = true
			f.val.path = join(y.path, f.key)
			out = append(out, f)
		}
	}
	return out
}

// withLine is n reported at line (the key's), without changing the parsed tree.
func withLine(n *yaml.Node, line int) *yaml.Node {
	cp := *n
	cp.Line = line
	return &cp
}

// items lists a sequence's elements; anything but a list is an error.
func (c *conv) items(y node) []node {
	if y.n.Kind != yaml.SequenceNode {
		if !y.isNull() {
			c.errorf(y.src(), "must be a list, got %s", spec.DescribeNode(y.n))
		}
		return nil
	}
	out := make([]node, len(y.n.Content))
	for i, item := range y.n.Content {
		out[i] = node{n: resolve(item), path: fmt.Sprintf("%s[%d]", y.path, i)}
	}
	return out
}

// str is a scalar's text.
func (c *conv) str(y node) (string, bool) {
	if y.n.Kind != yaml.ScalarNode || y.isNull() {
		c.errorf(y.src(), "must be a string, got %s", spec.DescribeNode(y.n))
		return "", false
	}
	return y.n.Value, true
}

// integer is a scalar integer (a quoted one too: JSON files often quote numbers).
func (c *conv) integer(y node) (int64, bool) {
	if y.n.Kind == yaml.ScalarNode {
		if v, err := strconv.ParseInt(strings.TrimSpace(y.n.Value), 10, 64); err == nil {
			return v, true
		}
	}
	c.errorf(y.src(), "must be an integer, got %s", spec.DescribeNode(y.n))
	return 0, false
}

// number is a scalar number.
func (c *conv) number(y node) (float64, bool) {
	if y.n.Kind == yaml.ScalarNode {
		if v, err := strconv.ParseFloat(strings.TrimSpace(y.n.Value), 64); err == nil {
			return v, true
		}
	}
	c.errorf(y.src(), "must be a number, got %s", spec.DescribeNode(y.n))
	return 0, false
}

// boolean is a scalar true/false (YAML 1.1 spellings too, as process-compose's
// parser takes them).
func (c *conv) boolean(y node) (bool, bool) {
	if y.n.Kind == yaml.ScalarNode {
		switch strings.ToLower(y.n.Value) {
		case "true", "yes", "on":
			return true, true
		case "false", "no", "off":
			return false, true
		}
	}
	c.errorf(y.src(), "must be true or false, got %s", spec.DescribeNode(y.n))
	return false, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
