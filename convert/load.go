package convert

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tend-sh/tend/spec"
)

// Load reads the spec file at path in format (Auto: detected), converts it when it
// is not tend's own and loads the result with spec.LoadDocument: the one way every
// command (run, reload, validate, render) reads a spec. The Result (nil for a file
// that cannot be read) tells the format and the warnings, also when the spec is
// invalid; field errors of a converted spec name the line in the original file.
func Load(path, format string, opts spec.Options) (*spec.Spec, *Result, error) {
	data, err := spec.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return LoadBytes(path, data, format, opts)
}

// LoadBytes is Load of a spec already read (a revision pushed over the API, one kept
// in the revision store); path names it and places its directory.
func LoadBytes(path string, data []byte, format string, opts spec.Options) (*spec.Spec, *Result, error) {
	auto := format == Auto || format == ""
	res, err := Convert(data, filepath.Base(path), format, opts.Environ)
	if err != nil {
		return nil, nil, fileError(path, err)
	}
	if res.Format == Tend {
		s, err := spec.LoadDocument(path, data, data, opts)
		if err != nil && auto && !errors.As(err, new(*spec.Errors)) && strings.Contains(err.Error(), "the top level must be a mapping") {
			err = fmt.Errorf("%w; not a tend spec, nor pod_agent, iss, process-compose, supervisord or a Procfile by its shape (name one with --format)", err)
		}
		return s, res, err
	}
	doc, err := res.YAML(filepath.Base(path))
	if err != nil {
		return nil, res, fmt.Errorf("%s: %w", path, err)
	}
	s, err := spec.LoadDocument(path, data, doc, opts)
	var errs *spec.Errors
	if errors.As(err, &errs) {
		res.remap(errs)
	}
	return s, res, err
}

// fileError names the file in a converter's error: *spec.Errors with the original
// lines, so that it prints like a tend spec's errors.
func fileError(path string, err error) error {
	var ce *Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("%s: %w", path, err)
	}
	errs := &spec.Errors{File: path}
	for _, w := range ce.Errs {
		errs.Fields = append(errs.Fields, &spec.FieldError{Path: w.Path, Line: w.Line, Msg: w.Msg})
	}
	return errs
}

// remap points every field error of the converted spec at the original file: the
// line of the field it came from (or of its nearest parent) and its original path.
func (r *Result) remap(errs *spec.Errors) {
	for _, f := range errs.Fields {
		src, ok := r.sourceOf(f.Path)
		if !ok {
			f.Line = 0
			continue
		}
		f.Line = src.Line
		if src.Path != "" {
			f.Path = fmt.Sprintf("%s (%s)", src.Path, f.Path)
		}
	}
}
