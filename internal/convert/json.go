package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// object is one JSON object of the input with its path ("nodes[0].cpu_mem"),
// read through typed accessors that record which keys were used, so the
// keys nobody read can be reported as unknown.
type object struct {
	path string
	m    map[string]any
	used map[string]bool
}

// decodeObject parses data as one JSON object, keeping numbers exact.
func decodeObject(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid JSON: data after the top-level object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the top level must be a JSON object, got %s", kind(v))
	}
	return &object{m: m, used: map[string]bool{}}, nil
}

// at is the path of key in o.
func (o *object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// has reports whether key is present (even as null) and marks it used.
func (o *object) has(key string) bool {
	o.used[key] = true
	_, ok := o.m[key]
	return ok
}

// raw returns the value of key, marking it used; ok is false when the key
// is absent or null.
func (o *object) raw(key string) (any, bool) {
	o.used[key] = true
	v, ok := o.m[key]
	return v, ok && v != nil
}

// num reads a number.
func (o *object) num(key string) (float64, bool, error) {
	v, ok := o.raw(key)
	if !ok {
		return 0, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false, fmt.Errorf("%s: must be a number, got %s", o.at(key), kind(v))
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, fmt.Errorf("%s: %s is not a finite number", o.at(key), n)
	}
	return f, true, nil
}

// integer reads a whole number.
func (o *object) integer(key string) (int, bool, error) {
	f, ok, err := o.num(key)
	if err != nil || !ok {
		return 0, ok, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, false, fmt.Errorf("%s: must be a whole number, got %g", o.at(key), f)
	}
	return int(f), true, nil
}

// nums reads a number or a list of numbers.
func (o *object) nums(key string) ([]float64, bool, error) {
	v, ok := o.raw(key)
	if !ok {
		return nil, false, nil
	}
	list, isList := v.([]any)
	if !isList {
		f, _, err := o.num(key)
		if err != nil {
			return nil, false, err
		}
		return []float64{f}, true, nil
	}
	if len(list) == 0 {
		return nil, false, fmt.Errorf("%s: empty list", o.at(key))
	}
	out := make([]float64, len(list))
	for i, e := range list {
		n, ok := e.(json.Number)
		if !ok {
			return nil, false, fmt.Errorf("%s[%d]: must be a number, got %s", o.at(key), i, kind(e))
		}
		f, err := n.Float64()
		if err != nil {
			return nil, false, fmt.Errorf("%s[%d]: %w", o.at(key), i, err)
		}
		out[i] = f
	}
	return out, true, nil
}

// str reads a string.
func (o *object) str(key string) (string, bool, error) {
	v, ok := o.raw(key)
	if !ok {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("%s: must be a string, got %s", o.at(key), kind(v))
	}
	return s, true, nil
}

// boolean reads a boolean.
func (o *object) boolean(key string) (bool, bool, error) {
	v, ok := o.raw(key)
	if !ok {
		return false, false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, false, fmt.Errorf("%s: must be true or false, got %s", o.at(key), kind(v))
	}
	return b, true, nil
}

// obj reads a nested object.
func (o *object) obj(key string) (*object, bool, error) {
	v, ok := o.raw(key)
	if !ok {
		return nil, false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("%s: must be an object, got %s", o.at(key), kind(v))
	}
	return &object{path: o.at(key), m: m, used: map[string]bool{}}, true, nil
}

// list reads an array of objects.
func (o *object) list(key string) ([]*object, bool, error) {
	v, ok := o.raw(key)
	if !ok {
		return nil, false, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, false, fmt.Errorf("%s: must be a list, got %s", o.at(key), kind(v))
	}
	out := make([]*object, len(arr))
	for i, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%s[%d]: must be an object, got %s", o.at(key), i, kind(e))
		}
		out[i] = &object{path: fmt.Sprintf("%s[%d]", o.at(key), i), m: m, used: map[string]bool{}}
	}
	return out, true, nil
}

// unknown returns the paths of the keys nobody read, sorted.
func (o *object) unknown() []string {
	var out []string
	for k := range o.m {
		if !o.used[k] {
			out = append(out, o.at(k))
		}
	}
	slices.Sort(out)
	return out
}

// kind names the JSON type of v for errors.
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return fmt.Sprintf("the string %q", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}
