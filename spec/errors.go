package spec

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// maxErrors bounds the list of field errors: a hostile or badly broken document must
// not produce megabytes of messages.
const maxErrors = 200

// FieldError is one problem in a spec, at a field path such as
// containers[0].liveness_probe.http_get.port.
type FieldError struct {
	Path string // field path; "" for the document as a whole
	Line int    // line of the field (or of its nearest present parent); 0 when unknown
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Errors lists every field error of a spec, in document order. Load returns it when
// the file could be read and parsed but its content is invalid.
type Errors struct {
	File   string        // the spec file
	Fields []*FieldError // in document order
}

// Error is one "path: message" per line, in document order.
func (e *Errors) Error() string {
	lines := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		lines[i] = f.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives errors.Is/As access to every field error.
func (e *Errors) Unwrap() []error {
	errs := make([]error, len(e.Fields))
	for i, f := range e.Fields {
		errs[i] = f
	}
	return errs
}

// collector gathers field errors during decoding and validation. It knows the line of
// every path the decoder saw, and suppresses follow-up errors under a path whose
// structure was already wrong (a list where a mapping belongs says it all).
type collector struct {
	errs    *multierror.Error
	lines   map[string]int
	broken  []string // paths with structural errors
	dropped int      // errors beyond maxErrors
}

func newCollector() *collector {
	return &collector{lines: map[string]int{}}
}

// addf records an error at path unless path lies under a structurally broken one.
func (c *collector) addf(path, format string, args ...any) {
	for _, b := range c.broken {
		if under(path, b) {
			return
		}
	}
	c.add(&FieldError{Path: path, Line: c.lineOf(path), Msg: fmt.Sprintf(format, args...)})
}

// structf records a structural error: nothing more is said about path or below it.
func (c *collector) structf(path string, line int, format string, args ...any) {
	for _, b := range c.broken {
		if under(path, b) {
			return
		}
	}
	c.broken = append(c.broken, path)
	c.add(&FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (c *collector) add(e *FieldError) {
	if c.count() >= maxErrors {
		c.dropped++
		return
	}
	c.errs = multierror.Append(c.errs, e)
}

func (c *collector) ok() bool { return c.count() == 0 }

// count is the number of errors recorded (multierror's Len does not take a nil *Error).
func (c *collector) count() int {
	if c.errs == nil {
		return 0
	}
	return len(c.errs.Errors)
}

// lineOf is the line of path or of its nearest parent the decoder saw.
func (c *collector) lineOf(path string) int {
	for p := path; p != ""; p = parent(p) {
		if l, ok := c.lines[p]; ok {
			return l
		}
	}
	return 0
}

// result is the collected errors in document order (stable by line), or nil.
func (c *collector) result(file string) error {
	if c.ok() {
		return nil
	}
	fields := make([]*FieldError, 0, c.count()+1)
	for _, err := range c.errs.Errors {
		var fe *FieldError
		if errors.As(err, &fe) {
			fields = append(fields, fe)
		}
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].Line < fields[j].Line })
	if c.dropped > 0 {
		fields = append(fields, &FieldError{Msg: fmt.Sprintf("... and %d more errors", c.dropped)})
	}
	return &Errors{File: file, Fields: fields}
}

// under tells whether path is p or lies below it.
func under(path, p string) bool {
	if p == "" || path == p {
		return true
	}
	return strings.HasPrefix(path, p) && (path[len(p)] == '.' || path[len(p)] == '[')
}

// parent strips the last segment of a path: a.b[2].c -> a.b[2] -> a.b -> a -> "".
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// join appends a field name to a path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// index appends a list index to a path.
func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
