package spec

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// optDoc has one Opt of each element type, tagged as the spec's fields are.
type optDoc struct {
	I Opt[int]     `yaml:"i,omitempty" json:"i,omitzero"`
	L Opt[int64]   `yaml:"l,omitempty" json:"l,omitzero"`
	F Opt[float64] `yaml:"f,omitempty" json:"f,omitzero"`
	S Opt[string]  `yaml:"s,omitempty" json:"s,omitzero"`
}

func TestOptValue(t *testing.T) {
	var unset Opt[int]
	if unset.IsSet() || !unset.IsZero() || unset.Get() != 0 {
		t.Errorf("zero Opt: IsSet %v, IsZero %v, Get %d; want false, true, 0", unset.IsSet(), unset.IsZero(), unset.Get())
	}
	zero := Some(0)
	if !zero.IsSet() || zero.IsZero() || zero.Get() != 0 {
		t.Errorf("Some(0): IsSet %v, IsZero %v, Get %d; want true, false, 0", zero.IsSet(), zero.IsZero(), zero.Get())
	}
	if got := Some("x").Get(); got != "x" {
		t.Errorf("Some(\"x\").Get() = %q", got)
	}
	if got := Ms(Some[int64](1500)); got.Milliseconds() != 1500 {
		t.Errorf("Ms(Some(1500)) = %v", got)
	}
	if got := Ms(Opt[int64]{}); got != 0 {
		t.Errorf("Ms(unset) = %v, want 0", got)
	}
}

func TestOptYAML(t *testing.T) {
	tests := []struct {
		name, in string
		want     optDoc
	}{
		{"absent", "{}", optDoc{}},
		{"present zeros", "{i: 0, l: 0, f: 0, s: ''}", optDoc{Some(0), Some[int64](0), Some(0.0), Some("")}},
		{"values", "{i: 7, l: 9000000000, f: 1.5, s: abc}", optDoc{Some(7), Some[int64](9000000000), Some(1.5), Some("abc")}},
		{"an integer as a float", "{f: 2}", optDoc{F: Some(2.0)}},
		{"null", "{i: null, l: ~, f: null, s: null}", optDoc{}},
		{"empty value", "i:\nl:\n", optDoc{}},
		{"alias", "{i: &n 3, l: *n}", optDoc{I: Some(3), L: Some[int64](3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got optDoc
			if err := yaml.Unmarshal([]byte(tt.in), &got); err != nil {
				t.Fatalf("Unmarshal(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Unmarshal(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			// Round trip: what was set is written (0 included), what was not is left out.
			out, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var again optDoc
			if err := yaml.Unmarshal(out, &again); err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("round trip through %q = %+v, %v; want %+v", out, again, err, got)
			}
		})
	}
}

func TestOptYAMLOmitempty(t *testing.T) {
	out, err := yaml.Marshal(optDoc{I: Some(0), F: Some(1.0), S: Some("")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "i: 0\nf: 1\ns: \"\"\n"; got != want {
		t.Errorf("Marshal = %q, want %q (a present 0 written, an absent field left out)", got, want)
	}
	// Without omitempty an unset field is null, as a nil pointer was.
	out, err = yaml.Marshal(struct{ V Opt[int] }{})
	if err != nil || string(out) != "v: null\n" {
		t.Errorf("Marshal of an unset field without omitempty = %q, %v; want \"v: null\\n\"", out, err)
	}
}

// TestOptYAMLWrongType: a value of the wrong type is a type error that lets decoding
// go on, and leaves the field present (as a pointer was), so that validation does not
// also call it missing.
func TestOptYAMLWrongType(t *testing.T) {
	var got optDoc
	err := yaml.Unmarshal([]byte("{i: abc, l: [1], f: 2.5}"), &got)
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) != 2 {
		t.Fatalf("Unmarshal error = %v, want a *yaml.TypeError with 2 errors", err)
	}
	if !got.I.IsSet() || got.I.Get() != 0 || !got.L.IsSet() || got.F != Some(2.5) {
		t.Errorf("after type errors: %+v; want i and l set to 0, f 2.5", got)
	}
}

func TestOptJSON(t *testing.T) {
	tests := []struct {
		name string
		doc  optDoc
		want string
	}{
		{"absent", optDoc{}, `{}`},
		{"present zeros", optDoc{Some(0), Some[int64](0), Some(0.0), Some("")}, `{"i":0,"l":0,"f":0,"s":""}`},
		{"values", optDoc{Some(7), Some[int64](9000000000), Some(1.5), Some("abc")}, `{"i":7,"l":9000000000,"f":1.5,"s":"abc"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.doc)
			if err != nil || string(out) != tt.want {
				t.Fatalf("Marshal = %s, %v; want %s", out, err, tt.want)
			}
			var got optDoc
			if err := json.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, tt.doc) {
				t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", out, got, err, tt.doc)
			}
		})
	}
	var got optDoc
	if err := json.Unmarshal([]byte(`{"i":null,"l":null,"f":null,"s":null}`), &got); err != nil || !reflect.DeepEqual(got, optDoc{}) {
		t.Errorf("Unmarshal of nulls = %+v, %v; want every field unset", got, err)
	}
	if err := json.Unmarshal([]byte(`{"i":"x"}`), &got); err == nil {
		t.Error(`Unmarshal({"i":"x"}) succeeded, want an error`)
	}
	// Without omitzero an unset field is null, as a nil pointer was.
	out, err := json.Marshal(struct{ V Opt[int] }{})
	if err != nil || string(out) != `{"V":null}` {
		t.Errorf(`Marshal of an unset field without omitzero = %s, %v; want {"V":null}`, out, err)
	}
}

// TestOptLoad: through Load, a present 0 is kept, and an absent or null field takes
// its default.
func TestOptLoad(t *testing.T) {
	s := mustLoad(t, `
containers:
  - name: zero
    command: sleep 1
    max_run_ms: 0
    stop_policy: {term_timeout_ms: 0, max_tries: 2}
  - name: absent
    command: sleep 1
  - name: nulls
    command: sleep 1
    max_run_ms: null
    stop_policy: {term_timeout_ms: ~, max_tries: null}
`, nil)
	zero, absent, nulls := s.Containers[0], s.Containers[1], s.Containers[2]
	if got := zero.StopPolicy.TermTimeoutMs; got != Some[int64](0) {
		t.Errorf("term_timeout_ms: 0 loaded as %+v, want a present 0", got)
	}
	if got := zero.StopPolicy.MaxTries; got != Some(2) {
		t.Errorf("max_tries: 2 loaded as %+v", got)
	}
	for _, c := range []Container{absent, nulls} {
		if got := c.StopPolicy.TermTimeoutMs; got != Some[int64](DefaultTermTimeoutMs) {
			t.Errorf("%s: term_timeout_ms = %+v, want the default %d", c.Name, got, DefaultTermTimeoutMs)
		}
		if got := c.StopPolicy.MaxTries; got != Some(DefaultMaxTries) {
			t.Errorf("%s: max_tries = %+v, want the default %d", c.Name, got, DefaultMaxTries)
		}
		if !c.MaxRunMs.IsSet() {
			t.Errorf("%s: max_run_ms not set after Load", c.Name)
		}
	}
	out, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "      term_timeout_ms: 0\n") {
		t.Errorf("render lost the present term_timeout_ms: 0:\n%s", out)
	}
}

// TestOptLoadWrongType: a field of the wrong type is reported once, by its path; it
// still counts as present, so its probe is not also said to need a handler.
func TestOptLoadWrongType(t *testing.T) {
	got := loadErrors(t, `
containers:
  - name: a
    command: sleep 1
    startup_probe:
      log_line: [a]
    readiness_probe:
      notify: {fd: x, watchdog_ms: 1000}
`, nil)
	want := []string{
		"containers[0].startup_probe.log_line: must be a string, got a list",
		"containers[0].readiness_probe.notify.fd: must be an integer, got \"x\"",
		"containers[0].readiness_probe.notify: has both fd (s6's protocol) and watchdog_ms (systemd's); s6's protocol has no watchdog",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOptElem(t *testing.T) {
	if elem, ok := optElem(reflect.TypeFor[Opt[float64]]()); !ok || elem != reflect.TypeFor[float64]() {
		t.Errorf("optElem(Opt[float64]) = %v, %v", elem, ok)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[int](), reflect.TypeFor[*Opt[int]](), reflect.TypeFor[TimeLimit]()} {
		if _, ok := optElem(typ); ok {
			t.Errorf("optElem(%v) took it for an Opt", typ)
		}
	}
}
