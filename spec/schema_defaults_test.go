package spec

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The schema's defaults are applyDefaults' own: a spec with every optional part
// present (each pointer allocated, one element in each slice and map) is defaulted,
// and every field it then holds is compared with the schema. A default that the
// schema states must be the value applyDefaults wrote wherever the field occurs; a
// value applyDefaults writes must be stated by the schema (schemaDefaults) unless it
// depends on where the field is, which the field's description says instead.
func TestSchemaDefaultsAreApplyDefaults(t *testing.T) {
	s := &Spec{}
	fillOptional(reflect.ValueOf(s).Elem(), map[reflect.Type]bool{})
	applyDefaults(s, "host", "/spec")
	applied := map[string][]string{} // field key (as the schema's) -> the values written
	collectValues(reflect.ValueOf(s).Elem(), "", applied)

	// Written by applyDefaults, but where the field is decides the value: the
	// description says it (and a test below checks the time limits').
	contextual := map[string]bool{
		"Instance.name": true, "Instance.dir": true, // the hostname, the spec's directory
		"Socket.name":                       true, // the container's name
		"TimeLimit.initial_delay_ms":        true,
		"TimeLimit.min_restart_period_ms":   true,
		"TimeLimit.max_restart_period_ms":   true,
		"TimeLimit.restart_period_scale_ms": true,
		"TimeLimit.restart_period_back_off": true,
		"TimeLimit.max_execution_time_ms":   true,
	}
	defaults := schemaDefaults()
	for key, want := range defaults {
		got, ok := applied[key]
		if !ok {
			t.Errorf("the schema says %s defaults to %v; applyDefaults writes nothing there", key, want)
			continue
		}
		for _, g := range got {
			if g != fmt.Sprint(want) {
				t.Errorf("the schema says %s defaults to %v; applyDefaults writes %s", key, want, g)
			}
		}
	}
	for key, got := range applied {
		if _, ok := defaults[key]; !ok && !contextual[key] {
			t.Errorf("applyDefaults writes %s = %s; the schema does not say so (schemaDefaults)", key, strings.Join(got, ", "))
		}
	}
	// A time limit's description names the default of each context.
	for key := range contextual {
		d := schemaDescriptions()[key]
		if !strings.Contains(d, "default") {
			t.Errorf("%s: its description does not state its default", key)
		}
		if !strings.HasPrefix(key, "TimeLimit.") {
			continue
		}
		for _, v := range applied[key] {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(d) {
				t.Errorf("%s: applyDefaults writes %s in some context; its description (%q) does not say so", key, v, d)
			}
		}
	}
	for _, key := range []string{"InitContainer.time_limit", "InitCommand.time_limit"} {
		d := schemaDescriptions()[key]
		for _, v := range []int64{initTimeLimit.initialDelayMs, initTimeLimit.minPeriodMs, initTimeLimit.maxPeriodMs} {
			if !regexp.MustCompile(`\b` + fmt.Sprint(v) + `\b`).MatchString(d) {
				t.Errorf("%s: its description (%q) does not name the default %d", key, d, v)
			}
		}
	}
}

// fillOptional makes every optional part of v present: pointers to structs
// allocated (once on a path: a recursive type ends), one element in each slice and
// one entry in each map. It writes no scalar.
func fillOptional(v reflect.Value, onPath map[reflect.Type]bool) {
	t := v.Type()
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem().Kind() != reflect.Struct || onPath[t.Elem()] {
			return
		}
		v.Set(reflect.New(t.Elem()))
		fillOptional(v.Elem(), onPath)
	case reflect.Slice:
		e := reflect.New(t.Elem()).Elem()
		fillOptional(e, onPath)
		v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), e))
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return
		}
		e := reflect.New(t.Elem()).Elem()
		fillOptional(e, onPath)
		m := reflect.MakeMap(t)
		m.SetMapIndex(reflect.ValueOf("x").Convert(t.Key()), e)
		v.Set(m)
	case reflect.Struct:
		if _, ok := optElem(t); ok || isQuantity(t) || t == commandType {
			return
		}
		onPath[t] = true
		defer delete(onPath, t)
		for i := range t.NumField() {
			if t.Field(i).IsExported() && t.Field(i).Tag.Get("yaml") != "-" {
				fillOptional(v.Field(i), onPath)
			}
		}
	}
}

// collectValues records in applied every scalar field of v that holds a value (an
// Opt that is set, a string that is not empty, a true bool or a number not 0), by
// the schema's key of the field: the struct's type name and the field's yaml name.
func collectValues(v reflect.Value, key string, applied map[string][]string) {
	t := v.Type()
	if _, ok := optElem(t); ok && !isQuantity(t) {
		if v.MethodByName("IsSet").Call(nil)[0].Bool() {
			addValue(applied, key, fmt.Sprint(v.MethodByName("Get").Call(nil)[0].Interface()))
		}
		return
	}
	switch {
	case isQuantity(t), t == commandType:
	case t.Kind() == reflect.Pointer:
		if !v.IsNil() {
			collectValues(v.Elem(), key, applied)
		}
	case t.Kind() == reflect.Slice:
		for i := range v.Len() {
			collectValues(v.Index(i), key+"[]", applied)
		}
	case t.Kind() == reflect.Map:
		for _, k := range v.MapKeys() {
			collectValues(v.MapIndex(k), key+"{}", applied)
		}
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case strings.Contains(opts, "inline"):
				collectValues(v.Field(i), "", applied)
			case name != "" && name != "-":
				collectValues(v.Field(i), t.Name()+"."+name, applied)
			}
		}
	case !v.IsZero():
		addValue(applied, key, fmt.Sprint(v.Interface()))
	}
}

func addValue(applied map[string][]string, key, value string) {
	if !slices.Contains(applied[key], value) {
		applied[key] = append(applied[key], value)
	}
}
