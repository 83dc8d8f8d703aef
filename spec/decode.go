package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// Bounds on a document, so that no input can take unbounded memory or time.
const (
	maxDepth         = 64      // nesting of mappings and lists, aliases followed
	maxExpandedNodes = 250_000 // nodes after alias expansion (billion laughs); a real spec has a few thousand
)

// decode parses data as one YAML (or JSON) document and decodes it strictly into a
// Spec. A syntax error is a *FieldError with its line; a document that cannot be a
// spec at all gives a one-line error (without the file name); unknown fields, duplicate keys and values of the wrong type are recorded
// in c with their paths and lines, and decoding goes on so every one is reported.
func decode(data []byte, c *collector) (*Spec, error) {
	// Before parsing: yaml.v3 takes a few hundred bytes a node, and a 1 MB file can
	// hold 500,000 of them ("[1,1,...").
	if n := NodeBound(data); n > maxExpandedNodes {
		return nil, fmt.Errorf("too large: up to %d YAML nodes (at most %d)", n, maxExpandedNodes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no YAML document (only comments or blank lines)")
		}
		return nil, syntaxError(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(data, err)
	default:
		return nil, fmt.Errorf("more than one YAML document (line %d)", extra.Line)
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) != 1 {
			return nil, errors.New("no YAML document")
		}
		root = doc.Content[0]
	}
	if err := checkSize(root); err != nil {
		return nil, err
	}
	if isNull(root) {
		return nil, errors.New("the document is empty")
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the top level must be a mapping, got %s (line %d)", DescribeNode(root), root.Line)
	}

	w := walker{c: c}
	w.walk(root, reflect.TypeFor[Spec](), "")

	var s Spec
	if err := root.Decode(&s); err != nil && c.ok() {
		// The walker checks everything Decode does; this is a safety net.
		return nil, yamlError(err)
	}
	expandTimings(&s, c)
	return &s, nil
}

// yamlError drops the "yaml: " prefix of go-yaml's messages.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(msg, "\n", "; ")
	return errors.New(msg)
}

// lineMessage is go-yaml's "line N: problem".
var lineMessage = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })

// syntaxError is a parse error of data at the line of the problem. go-yaml names the
// line where the construct around the problem began (the list or mapping whose
// indentation broke: often line 1 or 2); the problem line is the first line whose
// addition to the document makes it fail with the same problem. A tab in the
// indentation of that line is said so plainly.
func syntaxError(data []byte, err error) error {
	err = yamlError(err)
	m := lineMessage().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	line, _ := strconv.Atoi(m[1])
	problem := m[2]
	line = problemLine(data, line, problem)
	text := lineText(data, line)
	indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
	switch {
	case strings.Contains(indent, "\t") || strings.Contains(problem, "tab character"):
		problem = "tab characters are not allowed for indentation"
	case problem == "mapping values are not allowed in this context" && quoteHint(text) != "":
		problem += quoteHint(text)
	case problem == "did not find expected key" || problem == "did not find expected '-' indicator" ||
		problem == "mapping values are not allowed in this context":
		problem += " (check the indentation of this line and the one before)"
	}
	return &FieldError{Line: line, Msg: problem}
}

// quoteHint is the fix for a line whose plain value holds ": " (command: python3 -c
// 'while True: pass'), which YAML reads as a second key: the line with the value
// quoted. "" when the line is not "key: value" with such a value.
func quoteHint(text string) string {
	body := strings.TrimLeft(text, " ")
	for strings.HasPrefix(body, "- ") {
		body = strings.TrimLeft(body[2:], " ")
	}
	key, value, ok := strings.Cut(body, ": ")
	value = strings.TrimSpace(value)
	if !ok || key == "" || strings.ContainsAny(key, " \"'") || value == "" ||
		strings.ContainsAny(value[:1], "\"'{[|>&*!#") || !strings.Contains(value, ": ") {
		return ""
	}
	if i := strings.Index(value, " #"); i >= 0 {
		value = strings.TrimSpace(value[:i]) // a comment
	}
	return fmt.Sprintf(" (a \": \" inside a value starts a mapping: quote the value, %s: %s)", key, quoteYAML(value))
}

// quoteYAML writes s as one YAML flow scalar: in double quotes when that needs no
// escape, else in single quotes (a ' doubled).
func quoteYAML(s string) string {
	if !strings.ContainsAny(s, "\"\\") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// problemLine is the first line from `from` on whose prefix of data fails to parse
// with problem (found by bisection: a prefix without the problem line parses, or
// fails differently), or from when none does.
func problemLine(data []byte, from int, problem string) int {
	ends := lineEnds(data)
	fails := func(line int) bool {
		var n yaml.Node
		err := yaml.Unmarshal(data[:ends[line-1]], &n)
		if err == nil {
			return false
		}
		m := lineMessage().FindStringSubmatch(strings.TrimPrefix(err.Error(), "yaml: "))
		return m != nil && m[2] == problem
	}
	lo, hi := max(from, 1), len(ends)
	if lo > hi || !fails(hi) {
		return from
	}
	for lo < hi { // fails(hi) holds
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

// lineEnds are the offsets just past each line of data (its newline included).
func lineEnds(data []byte) []int {
	var ends []int
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		ends = append(ends, len(data))
	}
	return ends
}

// lineText is line n (from 1) of data without its newline, "" past the end.
func lineText(data []byte, n int) string {
	for i := 1; len(data) > 0; i++ {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if i == n {
			return string(line)
		}
		data = rest
	}
	return ""
}

// NodeBound is an upper bound on the YAML nodes in data, without parsing it: every
// node but a line's first follows an indicator (, [ { : - ?), so lines plus those
// characters count every node (and every such character inside a string too).
func NodeBound(data []byte) int {
	n := 1
	for _, b := range data {
		switch b {
		case '\n', ',', '[', '{', ':', '-', '?':
			n++
		}
	}
	return n
}

// checkSize rejects documents nested deeper than maxDepth or larger than
// maxExpandedNodes once aliases are expanded. The sizes of anchored nodes are
// memoised, so the check is linear in the parsed (unexpanded) document: only an
// alias reaches a node twice, and an alias names an anchored node.
func checkSize(root *yaml.Node) error {
	type measure struct{ nodes, height int }
	memo := map[*yaml.Node]measure{}
	var measureOf func(n *yaml.Node, depth int) (measure, error)
	measureOf = func(n *yaml.Node, depth int) (measure, error) {
		if depth > maxDepth {
			return measure{}, fmt.Errorf("nested deeper than %d levels (line %d)", maxDepth, n.Line)
		}
		if n.Anchor != "" {
			if m, ok := memo[n]; ok {
				if depth+m.height > maxDepth {
					return measure{}, fmt.Errorf("nested deeper than %d levels through aliases (line %d)", maxDepth, n.Line)
				}
				return m, nil
			}
		}
		m := measure{nodes: 1}
		children := n.Content
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			children = []*yaml.Node{n.Alias}
			m.nodes = 0
		}
		for _, child := range children {
			cm, err := measureOf(child, depth+1)
			if err != nil {
				return measure{}, err
			}
			m.nodes += cm.nodes
			m.height = max(m.height, cm.height+1)
			if m.nodes > maxExpandedNodes {
				return measure{}, fmt.Errorf("more than %d nodes, aliases expanded (line %d)", maxExpandedNodes, n.Line)
			}
		}
		if n.Anchor != "" {
			memo[n] = m
		}
		return m, nil
	}
	_, err := measureOf(root, 0)
	return err
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// DescribeNode names a YAML node's kind for messages ("must be a list, got a
// mapping"), a scalar by its value cut to 40 characters; the converters use it too.
func DescribeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("%q", v)
	}
	return "nothing"
}

var commandType = reflect.TypeFor[Command]()

// walker checks a parsed document against the schema's yaml tags, recording the line
// of every path it sees and an error for every unknown field, duplicate key and value
// of the wrong kind or type.
type walker struct {
	c *collector
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, seen := w.c.lines[path]; !seen {
		w.c.lines[path] = n.Line
	}
	if isNull(n) {
		return // the same as an absent field
	}
	if t == commandType {
		w.command(n, path)
		return
	}
	if t == rlimitType {
		w.rlimit(n, path)
		return
	}
	if isQuantity(t) {
		w.quantity(n, t, path) // before Opt: a quantity embeds one
		return
	}
	if elem, ok := optElem(t); ok {
		w.scalar(n, elem, path) // an Opt is checked as its element
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(n, t.Elem(), path)
	case reflect.Struct:
		w.mapping(n, t, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.c.structf(path, n.Line, "must be a list, got %s%s", DescribeNode(n), formHint(n, t))
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), index(path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.c.structf(path, n.Line, "must be a mapping, got %s%s", DescribeNode(n), formHint(n, t))
			return
		}
		w.keys(n, path, func(key string, value *yaml.Node) {
			w.walk(value, t.Elem(), join(path, key))
		})
	default:
		w.scalar(n, t, path)
	}
}

// mapping checks a struct-typed node: every key must name a field.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.c.structf(path, n.Line, "must be a mapping, got %s%s", DescribeNode(n), formHint(n, t))
		return
	}
	fields := yamlFields(t)
	w.keys(n, path, func(key string, value *yaml.Node) {
		ft, ok := fields[key]
		if !ok {
			w.c.structf(join(path, key), keyLine(n, key), "unknown field%s", unknownHint(key, value, fields))
			return
		}
		w.walk(value, ft, join(path, key))
	})
}

// unknownHint is the "did you mean" of an unknown key in a mapping of fields: a
// Kubernetes timing or another tool's limit says which field of tend means it, a key
// without its unit the _ms field, else the nearest name; "" when none is near.
func unknownHint(key string, value *yaml.Node, fields map[string]reflect.Type) string {
	if hint := habitHint(key, fields); hint != "" {
		return hint
	}
	if hint := kubernetesHint(key, value, fields); hint != "" {
		return hint
	}
	if hint := limitHint(key, fields); hint != "" {
		return hint
	}
	if hint := msHint(key, value, fields); hint != "" {
		return hint
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	if guess := closest(key, names); guess != "" {
		return fmt.Sprintf(" (did you mean %s?)", guess)
	}
	return ""
}

var (
	envListType   = reflect.TypeFor[[]EnvVar]()
	envVarType    = reflect.TypeFor[EnvVar]()
	dependsOnType = reflect.TypeFor[map[string]string]()
)

// formHint shows the form tend takes for what compose writes otherwise: env as a
// mapping or as NAME=VALUE strings (tend: a list of {name, value}), depends_on as a
// list of names (tend: a mapping of name to condition). Built from the document's
// own values, so the user can paste it; "" for any other mismatch.
func formHint(n *yaml.Node, t reflect.Type) string {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	const most = 3 // entries shown; the form is clear from a few
	switch {
	case t == envListType && n.Kind == yaml.MappingNode:
		var items []string
		for i := 0; i+1 < len(n.Content) && len(items) < most; i += 2 {
			items = append(items, envItem(n.Content[i].Value, n.Content[i+1].Value))
		}
		return " (write a list: [" + strings.Join(items, ", ") + more(len(n.Content)/2, most) + "])"
	case t == envVarType && n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "="):
		name, value, _ := strings.Cut(n.Value, "=")
		return " (write " + envItem(name, value) + ")"
	case t == dependsOnType && n.Kind == yaml.SequenceNode:
		var items []string
		for _, item := range n.Content {
			if len(items) == most {
				break
			}
			if item.Kind == yaml.ScalarNode {
				items = append(items, flowScalar(item.Value)+": started")
			}
		}
		if len(items) == 0 {
			return " (write {NAME: started}, or ready, succeeded, completed)"
		}
		return " (write {" + strings.Join(items, ", ") + more(len(n.Content), most) + "}; a condition is started, ready, succeeded or completed)"
	}
	return ""
}

func envItem(name, value string) string {
	return "{name: " + flowScalar(name) + ", value: " + flowScalar(value) + "}"
}

func more(n, shown int) string {
	if n > shown {
		return ", ..."
	}
	return ""
}

// flowScalar writes s so that it reads back as the same string inside a flow
// collection: plain when it is a simple word, else quoted.
func flowScalar(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain && !strings.ContainsAny(s[:1], "-.") {
		return s
	}
	return quoteYAML(s)
}

// habitFields are the names docker compose, Kubernetes and supervisord give fields
// that tend names otherwise, and tend's names for them.
var habitFields = map[string][]string{
	"environment":       {"env"},
	"env_file":          {"env_files"},
	"restart":           {"restart_policy"},
	"healthcheck":       {"readiness_probe", "liveness_probe"},
	"readinessprobe":    {"readiness_probe"},
	"livenessprobe":     {"liveness_probe"},
	"startupprobe":      {"startup_probe"},
	"cmd":               {"command"},
	"entrypoint":        {"command"},
	"args":              {"command"},
	"workdir":           {"working_dir"},
	"workingdir":        {"working_dir"},
	"working_directory": {"working_dir"},
	"directory":         {"working_dir"},
	"cwd":               {"working_dir"},
	"dependson":         {"depends_on"},
	"stop_signal":       {"stop_policy"},
	"stopsignal":        {"stop_policy"},
	"stop_grace_period": {"stop_policy"},
	"initcontainers":    {"init_containers"},
}

// habitHint is the "did you mean" for a field another tool uses where tend has its
// own name (environment: → env), when the mapping has that field; "" otherwise.
func habitHint(key string, fields map[string]reflect.Type) string {
	want, ok := habitFields[strings.ToLower(key)]
	if !ok {
		want, ok = habitFields[strings.ToLower(strings.ReplaceAll(key, "_", ""))]
	}
	if !ok {
		return ""
	}
	var have []string
	for _, f := range want {
		if _, ok := fields[f]; ok && f != key {
			have = append(have, f)
		}
	}
	if len(have) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(have, " or "))
}

// keys calls f for each key of a mapping node, reporting non-scalar and duplicate keys.
func (w *walker) keys(n *yaml.Node, path string, f func(key string, value *yaml.Node)) {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		for k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			w.c.structf(path, k.Line, "a key must be a string, got %s", DescribeNode(k))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			w.c.structf(path, k.Line, "YAML merge keys (<<) are not supported")
			continue
		}
		p := join(path, k.Value)
		if line, dup := first[k.Value]; dup {
			w.c.structf(p, k.Line, "duplicate key (first at line %d)", line)
			continue
		}
		first[k.Value] = k.Line
		w.c.lines[p] = k.Line
		f(k.Value, v)
	}
}

func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// command checks a Command: a string or a list of strings.
func (w *walker) command(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.ScalarNode:
		w.noNUL(n, path)
	case yaml.SequenceNode:
		for i, item := range n.Content {
			for item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			if item.Kind != yaml.ScalarNode || isNull(item) {
				w.c.structf(index(path, i), item.Line, "must be a string, got %s", DescribeNode(item))
				continue
			}
			w.noNUL(item, index(path, i))
		}
	default:
		w.c.structf(path, n.Line, "must be a string or a list of strings, got %s", DescribeNode(n))
	}
}

// scalar checks a leaf by decoding it into a fresh value of its Go type.
func (w *walker) scalar(n *yaml.Node, t reflect.Type, path string) {
	want := map[reflect.Kind]string{
		reflect.String: "a string", reflect.Bool: "true or false",
		reflect.Int: "an integer", reflect.Int64: "an integer", reflect.Float64: "a number",
	}[t.Kind()]
	if n.Kind != yaml.ScalarNode {
		w.c.structf(path, n.Line, "must be %s, got %s", want, DescribeNode(n))
		return
	}
	if t.Kind() == reflect.String {
		w.noNUL(n, path)
		return // every scalar is a string (port: 8080 is "8080")
	}
	tags := map[reflect.Kind]string{reflect.Bool: "!!bool", reflect.Int: "!!int", reflect.Int64: "!!int", reflect.Float64: "!!float"}
	tag := n.ShortTag()
	// go-yaml would truncate 1.5 into an int; only a float field takes both.
	tagOK := tag == tags[t.Kind()] || (t.Kind() == reflect.Float64 && tag == "!!int")
	if err := n.Decode(reflect.New(t).Interface()); err != nil || !tagOK {
		w.c.structf(path, n.Line, "must be %s, got %s%s", want, DescribeNode(n), unitHint(path, n))
	}
}

// noNUL refuses a string with a NUL byte (a YAML "\0" or JSON "\u0000"): no path,
// argument or environment variable can hold one, and the system calls that take
// them would fail at run time, again and again. Only a file's content may.
func (w *walker) noNUL(n *yaml.Node, path string) {
	if strings.IndexByte(n.Value, 0) >= 0 && !strings.HasSuffix(path, ".content") {
		w.c.structf(path, n.Line, "has a NUL byte; no path, command or variable can hold one")
	}
}

// unitHint is the fix for a duration written with a unit where a field takes a
// number of milliseconds (term_timeout_ms: 10s): the number to write; "" otherwise.
func unitHint(path string, n *yaml.Node) string {
	field := path[strings.LastIndexAny(path, ".")+1:]
	if !strings.HasSuffix(field, "_ms") {
		return ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil || d < 0 {
		return " (it takes milliseconds)"
	}
	return fmt.Sprintf(" (it takes milliseconds: %s: %d)", field, d.Milliseconds())
}

// yamlFields maps the yaml names of a struct's fields (inline ones included) to types.
// The map is made once per type and shared: callers only read it. The walker asks at
// every mapping, so for every container of a spec (it was 18 % of loading 1000).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if fields, ok := fieldsByType.Load(t); ok {
		return fields.(map[string]reflect.Type)
	}
	fields := makeYAMLFields(t)
	fieldsByType.Store(t, fields)
	return fields
}

// fieldsByType holds yamlFields' maps by reflect.Type.
var fieldsByType sync.Map

func makeYAMLFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// UnmarshalYAML accepts a string or a list of strings.
func (c *Command) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if isNull(n) {
			*c = Command{}
			return nil
		}
		*c = Command{String: n.Value}
		return nil
	case yaml.SequenceNode:
		list := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			for item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			if item.Kind != yaml.ScalarNode || isNull(item) {
				return fmt.Errorf("line %d: a command list holds strings", item.Line)
			}
			list = append(list, item.Value)
		}
		*c = Command{List: list, IsList: true}
		return nil
	}
	return fmt.Errorf("line %d: a command is a string or a list of strings", n.Line)
}

// MarshalYAML writes the form the document used.
func (c Command) MarshalYAML() (any, error) {
	if c.IsList {
		return c.List, nil
	}
	return c.String, nil
}

// MarshalJSON writes the form the document used.
func (c Command) MarshalJSON() ([]byte, error) {
	if c.IsList {
		return json.Marshal(c.List)
	}
	return json.Marshal(c.String)
}

// UnmarshalJSON accepts a string or a list of strings.
func (c *Command) UnmarshalJSON(data []byte) error {
	var list []string
	if err := json.Unmarshal(data, &list); err == nil {
		*c = Command{List: list, IsList: list != nil}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return errors.New("a command is a string or a list of strings")
	}
	*c = Command{String: s}
	return nil
}

// IsEmpty tells whether the command has nothing to run (before $VAR expansion).
func (c Command) IsEmpty() bool {
	if c.IsList {
		return len(c.List) == 0 || c.List[0] == ""
	}
	return strings.TrimSpace(c.String) == ""
}

// msHint suggests the _ms field for a key that names it without the unit, or in
// seconds (term_timeout: 5s, timeout_seconds: 5), and what the value is in
// milliseconds when it can tell: a Go duration, or a number of seconds.
func msHint(key string, value *yaml.Node, fields map[string]reflect.Type) string {
	base, seconds := key, false
	for _, suffix := range []string{"_seconds", "_secs", "_sec", "_s"} {
		if b, ok := strings.CutSuffix(key, suffix); ok {
			base, seconds = b, true
			break
		}
	}
	name := base + "_ms"
	if _, ok := fields[name]; !ok {
		return ""
	}
	hint := fmt.Sprintf(" (did you mean %s? it takes milliseconds", name)
	for value.Kind == yaml.AliasNode && value.Alias != nil {
		value = value.Alias
	}
	if value.Kind == yaml.ScalarNode {
		v := strings.TrimSpace(value.Value)
		if d, err := time.ParseDuration(v); err == nil {
			return fmt.Sprintf("%s: %d)", hint, d.Milliseconds())
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil && seconds && n >= 0 && n < 1e12 {
			return fmt.Sprintf("%s: %d)", hint, int64(n*1000))
		}
	}
	return hint + ")"
}
