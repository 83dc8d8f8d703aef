package spec

import (
	"bytes"
	"encoding/json"

	"go.yaml.in/yaml/v3"
)

// Redacted replaces a secret's value wherever a spec is written out.
const Redacted = "<redacted>"

// Render is the YAML of the spec after defaults and substitution, secrets redacted.
func (s *Spec) Render() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// envVarDoc is EnvVar without its methods, for encoding.
type envVarDoc EnvVar

// redacted is the variable as it may be shown: a value_from secret's value is Redacted.
func (v EnvVar) redacted() envVarDoc {
	if v.ValueFrom != nil {
		v.Value = Redacted
	}
	v.secret = ""
	return envVarDoc(v)
}

// MarshalYAML never writes a secret: a value_from variable shows value <redacted>.
func (v EnvVar) MarshalYAML() (any, error) { return v.redacted(), nil }

// MarshalJSON never writes a secret: a value_from variable shows value <redacted>.
func (v EnvVar) MarshalJSON() ([]byte, error) { return json.Marshal(v.redacted()) }
