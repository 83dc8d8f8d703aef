package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"

	"github.com/tend-sh/tend/status"
)

// statusCache keeps the last status document GET /v1/status encoded, with its
// encoding: a document equal to it is not encoded again. Encoding was most of what a
// tend top viewer cost tend (100 containers: about 1 ms a read, each viewer reading
// each second), and a document is built fresh for every read but changes far less
// often: an idle container's usage reads the same second after second, and viewers
// that read within the same second see the same sample. Comparing a document with
// the last one (equal) costs a fraction of encoding it. tend's own process (Document.Tend),
// which changes with nearly every read, is left out and written after (withTend).
type statusCache struct {
	mu      sync.Mutex
	doc     status.Document // a deep copy of the last document encoded, Tend nil
	body    []byte          // its encoding, with the encoder's final newline; never changed once made
	encodes int             // documents encoded (a test reads it)
}

// encode returns the encoding of doc without its Tend (as json.Encoder writes it,
// newline included): the kept one when doc equals the last document encoded. The
// bytes are shared: callers only read them.
func (c *statusCache) encode(doc status.Document) ([]byte, error) {
	doc.Tend = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.body != nil && equal(doc, c.doc) {
		return c.body, nil
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(doc); err != nil {
		return nil, err
	}
	c.encodes++
	// A copy, not doc itself: the slices and pointers of a document may be the
	// supervisor's own, which it goes on changing.
	c.doc, c.body = deepCopy(doc), b.Bytes()
	return c.body, nil
}

// withTend splits the document body (encode's, ending in "}\n") in the two parts that,
// written one after the other, are the document with tend's own process as its last
// key, "tend": byte for byte what json.Encoder writes for the document with Tend set
// (its last field). head is body's own bytes, not a copy.
func withTend(body []byte, tend *status.Process) (head, tail []byte, err error) {
	p, err := json.Marshal(tend)
	if err != nil {
		return nil, nil, err
	}
	tail = append(append([]byte(`,"tend":`), p...), "}\n"...)
	return bytes.TrimSuffix(body, []byte("}\n")), tail, nil
}

// deepCopy copies v with every pointer, slice and map it reaches copied too (the
// unexported fields of a struct, such as a time.Time's, are copied as they are).
func deepCopy[T any](v T) T {
	var out T
	copyValue(reflect.ValueOf(&out).Elem(), reflect.ValueOf(v))
	return out
}

func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyValue(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			val := reflect.New(src.Type().Elem()).Elem()
			copyValue(val, it.Value())
			m.SetMapIndex(it.Key(), val)
		}
		dst.Set(m)
	case reflect.Struct:
		dst.Set(src) // unexported fields as they are; exported ones copied below
		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				copyValue(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		val := reflect.New(src.Elem().Type()).Elem()
		copyValue(val, src.Elem())
		dst.Set(val)
	default:
		dst.Set(src)
	}
}

// equal reports whether a and b hold the same values, and so encode the same: as
// reflect.DeepEqual, but for trees without cycles (a status document), so without
// its record of the pointers visited, which made it cost half an encoding; and nil
// and empty slices and maps differ (null and [] in JSON). Pointers equal as
// pointers are equal without a look inside (a time.Time's location).
func equal[T any](a, b T) bool {
	return equalValue(reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem())
}

func equalValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Pointer:
		if a.Pointer() == b.Pointer() {
			return true
		}
		return !a.IsNil() && !b.IsNil() && equalValue(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			v := b.MapIndex(it.Key())
			if !v.IsValid() || !equalValue(it.Value(), v) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return a.Elem().Type() == b.Elem().Type() && equalValue(a.Elem(), b.Elem())
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Array:
		for i := range a.Len() {
			if !equalValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return false // kinds a document does not hold (funcs, channels): never equal, always encoded
}
