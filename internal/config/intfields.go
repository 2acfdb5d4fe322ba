package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// checkIntegerFields reports the first integer field (by the yaml tags of
// Scenario) whose value is written as a number with a fraction, such as
// max_num_seqs: 1.5. The YAML decoder would silently truncate it.
func checkIntegerFields(data []byte, name string) error {
	var first error
	walkFile(data, schemaVisitor{value: func(n ast.Node, t reflect.Type, path string) {
		if first == nil {
			first = checkInteger(n, t, path)
		}
	}})
	if first != nil {
		return fmt.Errorf("%s:%w", name, first)
	}
	return nil
}

// checkInteger refuses a fraction given for an integer field.
func checkInteger(n ast.Node, t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return nil
	}
	var x float64
	switch s := n.(type) {
	case *ast.FloatNode:
		x = s.Value
	case *ast.StringNode:
		f, err := strconv.ParseFloat(s.Value, 64)
		if err != nil {
			return nil // a type mismatch the decoder reports
		}
		x = f
	default:
		return nil
	}
	if x != math.Trunc(x) || math.IsInf(x, 0) {
		tok := n.GetToken()
		return fmt.Errorf("%d:%d: %s: must be a whole number (got %s); integer fields are never rounded",
			tok.Position.Line, tok.Position.Column, path, tok.Value)
	}
	return nil
}

// schemaVisitor is told, while walkSchema walks a YAML tree against the Go
// type it decodes into, of every node under a known field (with the
// field's type and path) and of every key the type does not have.
type schemaVisitor struct {
	value   func(n ast.Node, t reflect.Type, path string)
	unknown func(key *token.Token, parent reflect.Type, path string)
}

// walkFile walks every document of data against Scenario; a file that
// does not parse is left to the decoder, which reports it with its
// position.
func walkFile(data []byte, v schemaVisitor) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return
	}
	for _, doc := range f.Docs {
		walkSchema(doc.Body, reflect.TypeFor[Scenario](), "", v)
	}
}

func walkSchema(n ast.Node, t reflect.Type, path string, v schemaVisitor) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch a := n.(type) {
	case nil:
		return
	case *ast.AnchorNode:
		walkSchema(a.Value, t, path, v)
		return
	case *ast.TagNode:
		walkSchema(a.Value, t, path, v)
		return
	}
	if v.value != nil {
		v.value(n, t, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		var values []*ast.MappingValueNode
		switch m := n.(type) {
		case *ast.MappingNode:
			values = m.Values
		case *ast.MappingValueNode:
			values = []*ast.MappingValueNode{m}
		}
		for _, mv := range values {
			tok := mv.Key.GetToken()
			key := tok.Value // unquoted, as in JSON
			if ft, ok := fieldByTag(t, key); ok {
				walkSchema(mv.Value, ft, joinPath(path, key), v)
			} else if v.unknown != nil {
				v.unknown(tok, t, joinPath(path, key))
			}
		}
	case reflect.Slice:
		if s, ok := n.(*ast.SequenceNode); ok {
			for i, e := range s.Values {
				walkSchema(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), v)
			}
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldByTag finds the struct field whose yaml tag names key.
func fieldByTag(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == key {
			return f.Type, true
		}
	}
	return nil, false
}
