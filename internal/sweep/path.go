package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/config"
)

// Path is a parsed scenario field path such as "instances[1].count": a
// chain of keys (the YAML field names) and list indices.
type Path []Step

// Step is one element of a Path: a field name, or a list index when Key is
// empty.
type Step struct {
	Key   string
	Index int
}

// String renders the path in the syntax ParsePath reads.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		if s.Key == "" {
			fmt.Fprintf(&b, "[%d]", s.Index)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.Key)
	}
	return b.String()
}

// ParsePath parses a field path: YAML field names separated by dots, each
// optionally followed by list indices in brackets, e.g. "seed",
// "workload.time_scale", "instances[1].count", "slo.percentiles[0].max_ms".
func ParsePath(s string) (Path, error) {
	if s == "" {
		return nil, errors.New("empty field path")
	}
	var p Path
	for _, part := range strings.Split(s, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key == "" {
			return nil, fmt.Errorf("field path %q: empty field name (write e.g. instances[1].count)", s)
		}
		for _, r := range key {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return nil, fmt.Errorf("field path %q: invalid character %q in field name %q", s, r, key)
			}
		}
		p = append(p, Step{Key: key})
		if rest == "" && !strings.Contains(part, "[") {
			continue
		}
		rest = "[" + rest
		for rest != "" {
			if rest[0] != '[' {
				return nil, fmt.Errorf("field path %q: unexpected %q after an index", s, rest)
			}
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("field path %q: missing ']'", s)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("field path %q: index %q must be a non-negative integer", s, rest[1:end])
			}
			p = append(p, Step{Index: n})
			rest = rest[end+1:]
		}
	}
	return p, nil
}

var scenarioType = reflect.TypeFor[config.Scenario]()

// CheckPath checks p against the scenario schema: every name must be a
// field of the structure it is applied to and every index must be applied
// to a list. The error lists the valid field names at the failing level.
func CheckPath(p Path) error {
	t := scenarioType
	for i, s := range p {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		prefix := p[:i].String()
		if s.Key == "" {
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return fmt.Errorf("field path %q: %s is not a list and cannot be indexed", p, orRoot(prefix))
			}
			t = t.Elem()
			continue
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByTag(t, s.Key)
			if !ok {
				return fmt.Errorf("field path %q: unknown field %q in %s (valid: %s)", p, s.Key, orRoot(prefix), strings.Join(fieldNames(t), ", "))
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		case reflect.Slice, reflect.Array:
			return fmt.Errorf("field path %q: %s is a list; select an element with [i] before .%s", p, orRoot(prefix), s.Key)
		default:
			return fmt.Errorf("field path %q: %s is a %s value and has no field %q", p, orRoot(prefix), t.Kind(), s.Key)
		}
	}
	return nil
}

func orRoot(prefix string) string {
	if prefix == "" {
		return "the scenario"
	}
	return prefix
}

// yamlName returns the YAML name of a struct field ("" if it is not
// serialised).
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag, ok := f.Tag.Lookup("yaml")
	if !ok {
		return strings.ToLower(f.Name)
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if inline(f) {
			if g, ok := fieldByTag(f.Type, name); ok {
				return g, true
			}
			continue
		}
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// inline says whether f is an embedded struct whose fields sit inline in
// its parent (yaml:",inline").
func inline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return f.Anonymous && opts == "inline" && f.Type.Kind() == reflect.Struct
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if f := t.Field(i); inline(f) {
			names = append(names, fieldNames(f.Type)...)
		} else if n := yamlName(f); n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// tree is a scenario as a generic JSON value: map[string]any, []any,
// json.Number, string, bool or nil.
type tree = any

// toTree converts any JSON-marshalable value to a generic tree.
func toTree(v any) (tree, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeTree(data)
}

func decodeTree(data []byte) (tree, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var t tree
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	return t, nil
}

// set returns root with the value at p replaced by v. Missing or null
// intermediate objects are created (the schema check has vouched for the
// names); list indices must exist.
func set(root tree, p Path, v tree) (tree, error) {
	if len(p) == 0 {
		return v, nil
	}
	s := p[0]
	if s.Key == "" {
		list, ok := root.([]any)
		if !ok || s.Index >= len(list) {
			n := 0
			if ok {
				n = len(list)
			}
			return nil, fmt.Errorf("index [%d] is out of range: the list has %d element(s)", s.Index, n)
		}
		nv, err := set(list[s.Index], p[1:], v)
		if err != nil {
			return nil, err
		}
		list[s.Index] = nv
		return list, nil
	}
	obj, ok := root.(map[string]any)
	if !ok {
		if root != nil {
			return nil, fmt.Errorf("cannot set field %q in a %T value", s.Key, root)
		}
		obj = map[string]any{}
	}
	nv, err := set(obj[s.Key], p[1:], v)
	if err != nil {
		return nil, err
	}
	obj[s.Key] = nv
	return obj, nil
}
