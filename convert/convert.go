// Package convert turns spec files of other supervisors (pod_agent, ISS,
// process-compose, supervisord, Procfile) into tend specs, one file per format. Each
// converter is a pure function from the file's bytes to a tend spec document plus
// warnings with positions in the original; package spec still does all validation.
package convert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tend-sh/tend/spec"
)

// Format names, as --format and --from take them.
const (
	Auto           = "auto"
	Tend           = "tend"
	PodAgent       = "pod_agent"
	ISS            = "iss"
	ProcessCompose = "process-compose"
	Supervisord    = "supervisord"
	Procfile       = "procfile"
)

// Formats lists every format name --format accepts, auto first.
var Formats = []string{Auto, Tend, PodAgent, ISS, ProcessCompose, Supervisord, Procfile}

// converters maps each foreign format to its converter: data is the whole file.
var converters = map[string]func(data []byte, c *conv){
	PodAgent:       podAgent,
	ISS:            iss,
	ProcessCompose: processCompose,
	Supervisord:    supervisord,
	Procfile:       procfile,
}

// Source is a place in the original file: the field's path in that format's own
// terms (workloads[0].box_ref, [program:web].command) and its line, counted from 1.
type Source struct {
	Path string
	Line int
}

// Warning is something the conversion dropped or approximated.
type Warning struct {
	Source
	Msg string
}

func (w Warning) String() string { return w.Path + ": " + w.Msg }

// Result is a converted spec.
type Result struct {
	Format   string
	Spec     *spec.Spec // the document as converted: no defaults applied, not validated
	Warnings []Warning  // in the order of the original file

	sources  map[string]Source   // tend field path -> where it came from
	comments map[string][]string // tend field path -> comment lines above it
	mapped   map[string]bool     // original paths that were mapped to a tend field
}

// Error is input a converter cannot read: a syntax error or a structure it cannot
// map (a list where a mapping belongs). It names the line.
type Error struct {
	Format string
	Errs   []Warning // Path may be "" for the file as a whole
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Errs))
	for i, w := range e.Errs {
		lines[i] = w.String()
		if w.Path == "" {
			lines[i] = w.Msg
		}
	}
	return strings.Join(lines, "\n")
}

// Convert converts data, the content of a spec file, from format (Auto: detected by
// its shape, see Detect; name is the file's name, a hint for Procfiles). environ is
// tend's environment (os.Environ()): what supervisord's %(ENV_X)s expands from, as
// supervisord does when it reads its file. A tend spec comes back with Spec nil.
// Input the converter cannot read is an *Error.
func Convert(data []byte, name, format string, environ []string) (*Result, error) {
	if format == Auto || format == "" {
		format = Detect(data, name)
	}
	if format == Tend {
		return &Result{Format: Tend}, nil
	}
	f, ok := converters[format]
	if !ok {
		return nil, fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
	c := &conv{
		s:        &spec.Spec{},
		sources:  map[string]Source{},
		comments: map[string][]string{},
		mapped:   map[string]bool{},
		warned:   map[Warning]bool{},
		environ:  map[string]string{},
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			c.environ[k] = v // a later duplicate wins, as in os/exec
		}
	}
	f(data, c)
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Line < c.errs[j].Line })
		return nil, &Error{Format: format, Errs: c.errs}
	}
	sort.SliceStable(c.warnings, func(i, j int) bool { return c.warnings[i].Line < c.warnings[j].Line })
	return &Result{Format: format, Spec: c.s, Warnings: c.warnings, sources: c.sources, comments: c.comments, mapped: c.mapped}, nil
}

// conv is the state of one conversion: the tend spec being built, and what each of
// its fields came from. Converters call its methods for every field of the input,
// so that nothing is dropped silently: a field is mapped (from, approx) or warned
// about (drop, unknown).
type conv struct {
	s        *spec.Spec
	warnings []Warning
	errs     []Warning
	sources  map[string]Source
	comments map[string][]string
	mapped   map[string]bool
	warned   map[Warning]bool // c.warnings as a set
	full     bool             // maxContainers reached, said once
	environ  map[string]string
}

// maxContainers bounds the containers of a converted spec (numprocs copies and
// Procfile lines included): each costs some tens of KB to build, write out and read
// again, and a real file has a few dozen.
const maxContainers = 1000

// checkSize refuses, before anything is built, a spec of more than maxContainers
// containers or more than maxNodes fields (size counts each container's fields).
func (c *conv) checkSize(src Source, containers, size int) {
	switch {
	case containers > maxContainers:
		c.errorf(src, "too large to convert: %d containers (at most %d)", containers, maxContainers)
	case size > maxNodes:
		c.errorf(src, "too large to convert: %d fields once every copy is counted (at most %d)", size, maxNodes)
	}
}

// addContainer appends an empty container and returns its index; past maxContainers
// it records the error once and returns false.
func (c *conv) addContainer(src Source) (int, bool) {
	i := len(c.s.Containers)
	if i >= maxContainers {
		if !c.full {
			c.full = true
			c.errorf(src, "too large to convert: more than %d containers", maxContainers)
		}
		return 0, false
	}
	c.s.Containers = append(c.s.Containers, spec.Container{})
	return i, true
}

// from records that the tend field at path came from src.
func (c *conv) from(path string, src Source) {
	if _, ok := c.sources[path]; !ok {
		c.sources[path] = src
	}
	c.mapped[src.Path] = true
}

// approx maps src to the tend field at path and says how it differs: a warning and a
// comment above the field.
func (c *conv) approx(path string, src Source, format string, args ...any) {
	c.from(path, src)
	c.warn(path, src, fmt.Sprintf(format, args...))
}

// drop warns that src has no place in tend; the comment goes above near (the tend
// field it would have belonged to, e.g. the container).
func (c *conv) drop(near string, src Source, why string) {
	c.warn(near, src, "dropped ("+why+")")
}

// unknown warns about a field the converter does not know.
func (c *conv) unknown(near string, src Source) {
	c.warn(near, src, "unknown field (ignored)")
}

// warn records a warning once (numprocs copies of a program say it once) and a
// comment above near.
func (c *conv) warn(near string, src Source, msg string) {
	w := Warning{Source: src, Msg: msg}
	if !c.warned[w] {
		c.warned[w] = true
		c.warnings = append(c.warnings, w)
	}
	c.note(near, src.Path+": "+msg)
}

// note adds a comment above the tend field at path without a warning.
func (c *conv) note(path, text string) {
	c.comments[path] = append(c.comments[path], text)
}

// errorf records input that cannot be converted.
func (c *conv) errorf(src Source, format string, args ...any) {
	c.errs = append(c.errs, Warning{Source: src, Msg: fmt.Sprintf(format, args...)})
}

// Mapped tells whether the original field at path was mapped to a tend field.
func (r *Result) Mapped(path string) bool { return r.mapped[path] }

// sourceOf is where the tend field at path, or its nearest parent, came from.
func (r *Result) sourceOf(path string) (Source, bool) {
	for p := path; p != ""; p = parentPath(p) {
		if src, ok := r.sources[p]; ok {
			return src, true
		}
	}
	return Source{}, false
}

// parentPath strips the last segment of a path: a.b[2].c -> a.b[2] -> a.b -> a -> "".
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// containerPath is the tend path of containers[i].
func containerPath(i int) string { return fmt.Sprintf("containers[%d]", i) }

// braces escapes { and } for tend's {VAR} substitution: the formats converted here
// have no such substitution, so their braces are literal.
var braces = strings.NewReplacer("{", "{{", "}", "}}")

func literal(s string) string { return braces.Replace(s) }

// shell is a command run through a shell, as process-compose and foreman do.
func shell(sh, arg, cmd string) spec.Command {
	return spec.Command{List: []string{literal(sh), literal(arg), literal(cmd)}, IsList: true}
}
