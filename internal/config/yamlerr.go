package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/token"

	"github.com/servesim/servesim/internal/nearest"
)

// yamlError turns a decoder error into one line: file:line:col: message,
// naming the field at fault and, for an unknown field, the closest valid
// ones.
func yamlError(name string, err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return fmt.Errorf("%s: %w", name, err)
	}
	msg := ye.GetMessage()
	tok := ye.GetToken()
	if tok == nil || tok.Position == nil {
		return fmt.Errorf("%s: %s", name, msg)
	}
	var uf *yaml.UnknownFieldError
	switch {
	case errors.As(err, &uf):
		field := strings.Trim(strings.TrimPrefix(msg, "unknown field "), `"`)
		hint := " (docs/scenario.md lists the fields)"
		if near := nearest.Closest(fieldNames(), func(c string) int { return nearest.Distance(c, field) }, 2); len(near) > 0 && nearest.Distance(near[0], field) <= max(2, len(field)/3) {
			hint = fmt.Sprintf("; did you mean %s?", strings.Join(near[:1], ""))
		}
		msg += hint
	case strings.Contains(msg, "cannot unmarshal"):
		if key := keyOf(tok); key != "" {
			msg = fmt.Sprintf("%s: wrong type: want %s, got %s", key, wantType(msg), tok.Value)
		}
	}
	return fmt.Errorf("%s:%d:%d: %s", name, tok.Position.Line, tok.Position.Column, msg)
}

// keyOf returns the mapping key a value token belongs to ("" if none).
func keyOf(t *token.Token) string {
	for p := t.Prev; p != nil; p = p.Prev {
		if p.Type == token.MappingValueType {
			if p.Prev != nil {
				return p.Prev.Value
			}
			return ""
		}
		if p.Type == token.MappingStartType || p.Type == token.SequenceEntryType {
			return ""
		}
	}
	return ""
}

var goType = regexp.MustCompile(`of type (\S+)`)

// wantType names the Go type in a decoder message the way a scenario
// author reads it.
func wantType(msg string) string {
	m := goType.FindStringSubmatch(msg)
	if m == nil {
		return "another type"
	}
	switch t := m[1]; {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool" || t == "*bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	default:
		return "a mapping"
	}
}

var fieldNames = sync.OnceValue(func() []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || seen[name] {
				continue
			}
			seen[name] = true
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Scenario{}))
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
})

// closestTag returns the yaml key of struct t closest to key, or "" when
// none is close.
func closestTag(t reflect.Type, key string) string {
	var tags []string
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			tag, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if tag != "" && tag != "-" {
				tags = append(tags, tag)
			} else if tag == "" && opts == "inline" && t.Field(i).Type.Kind() == reflect.Struct {
				collect(t.Field(i).Type)
			}
		}
	}
	collect(t)
	near := nearest.Closest(tags, func(c string) int { return nearest.Distance(c, key) }, 1)
	if len(near) == 0 || nearest.Distance(near[0], key) > max(2, len(key)/3) {
		return ""
	}
	return near[0]
}
