package spec

import (
	"encoding/json"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"
)

// Opt is an optional number or string of the spec. A present 0 differs from an
// absent field (max_run_ms: 0 is written out and kept; an absent one takes its
// default), so the field remembers whether it was set. After Load every field with a
// default IsSet: consumers read Get and never meet a missing default.
//
// An unset Opt IsZero, so that yaml's omitempty and encoding/json's omitzero leave it
// out and keep a present 0. A YAML or JSON null is the same as an absent field.
type Opt[T optValue] struct {
	v   T
	set bool
}

// optValue are the element types of Opt.
type optValue interface {
	int | int64 | float64 | string | bool
}

// Some is an Opt set to v.
func Some[T optValue](v T) Opt[T] { return Opt[T]{v: v, set: true} }

// Get is the value, the zero value when unset.
func (o Opt[T]) Get() T { return o.v }

// IsSet tells whether the field was present (or defaulted).
func (o Opt[T]) IsSet() bool { return o.set }

// IsZero tells whether the field is unset (not whether it holds 0): omitempty and
// omitzero leave out only an absent field.
func (o Opt[T]) IsZero() bool { return !o.set }

// UnmarshalYAML decodes the node into T. go-yaml never calls it for a null, which
// leaves the field unset. A value of the wrong type leaves the field set to 0, as
// the pointer it replaces was: the field is present, so validation goes on without
// a "must be set" and the walker of decode.go reports the type with its path (the
// error returned here is go-yaml's *TypeError, which lets decoding go on).
func (o *Opt[T]) UnmarshalYAML(n *yaml.Node) error {
	var v T
	err := n.Decode(&v)
	*o = Some(v)
	return err
}

// MarshalYAML writes the value; an unset Opt (left out by omitempty) is null.
func (o Opt[T]) MarshalYAML() (any, error) {
	if !o.set {
		return nil, nil
	}
	return o.v, nil
}

// MarshalJSON writes the value; an unset Opt (left out by omitzero) is null.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.set {
		return []byte("null"), nil
	}
	return json.Marshal(o.v)
}

// UnmarshalJSON decodes a value of T; null leaves the field unset.
func (o *Opt[T]) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*o = Opt[T]{}
		return nil
	}
	var v T
	err := json.Unmarshal(data, &v)
	*o = Some(v) // set even when of the wrong type, as UnmarshalYAML
	return err
}

// elemType is T, for the decoder's walker and the schema, which see an Opt as its
// element.
func (Opt[T]) elemType() reflect.Type { return reflect.TypeFor[T]() }

// optional is implemented by every Opt type.
type optional interface{ elemType() reflect.Type }

var optionalType = reflect.TypeFor[optional]()

// optElem is T when t is an Opt[T].
func optElem(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct || !t.Implements(optionalType) {
		return nil, false
	}
	return reflect.Zero(t).Interface().(optional).elemType(), true
}

// Ms turns a millisecond field into a duration; an unset one (a field without a
// default) is 0.
func Ms(o Opt[int64]) time.Duration {
	return time.Duration(o.Get()) * time.Millisecond
}
