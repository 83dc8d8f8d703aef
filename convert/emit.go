package convert

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tend-sh/tend/spec"
)

// YAML writes the converted spec as a tend spec document, with a comment above each
// field the conversion approximated and above the nearest field of what it dropped.
// name is the original file, for the header.
func (r *Result) YAML(name string) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(r.Spec); err != nil {
		return nil, err
	}
	dropRedacted(&doc)
	present := map[string]*yaml.Node{} // tend path -> the node a comment goes on
	collect(&doc, "", present)
	placed := map[*yaml.Node][]string{}
	var top []string
	paths := make([]string, 0, len(r.comments))
	for p := range r.comments {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		at := p
		for at != "" && present[at] == nil {
			at = parentPath(at)
		}
		if at == "" {
			top = append(top, r.comments[p]...)
			continue
		}
		placed[present[at]] = append(placed[present[at]], r.comments[p]...)
	}
	for n, lines := range placed {
		n.HeadComment = commentText(lines)
	}
	head := []string{fmt.Sprintf("Converted by `tend convert` from %s (%s).", name, r.Format),
		"Comments name each field that was approximated or dropped."}
	doc.HeadComment = commentText(append(head, top...))

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// collect maps every tend path of a mapping key or list item to the node whose head
// comment sits just above it: the key, or a list item's first key.
func collect(n *yaml.Node, path string, out map[string]*yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			out[p] = n.Content[i]
			collect(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if item.Kind == yaml.MappingNode && len(item.Content) > 0 {
				out[p] = item.Content[0]
			}
			collect(item, p, out)
		}
	case yaml.DocumentNode:
		for _, c := range n.Content {
			collect(c, path, out)
		}
	}
}

// commentText is the lines of a comment, deduplicated, each one line.
func commentText(lines []string) string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		l = strings.ReplaceAll(l, "\n", " ")
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// dropRedacted removes the "value: <redacted>" that an env variable with value_from
// encodes as (spec's MarshalYAML, for render): a converted spec reads the secret from
// its file, and a value beside value_from would be an error.
func dropRedacted(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		hasFrom := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			hasFrom = hasFrom || n.Content[i].Value == "value_from"
		}
		for i := 0; hasFrom && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "value" && n.Content[i+1].Value == spec.Redacted {
				n.Content = append(n.Content[:i], n.Content[i+2:]...)
				break
			}
		}
	}
	for _, c := range n.Content {
		dropRedacted(c)
	}
}
