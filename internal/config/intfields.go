package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// checkIntegerFields reports the first integer field (by the yaml tags of
// Scenario) whose value is written as a number with a fraction, such as
// max_num_seqs: 1.5. The YAML decoder would silently truncate it.
func checkIntegerFields(data []byte, name string) error {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil // the decoder reports syntax errors with their position
	}
	for _, doc := range f.Docs {
		if err := checkIntNode(doc.Body, reflect.TypeFor[Scenario](), ""); err != nil {
			return fmt.Errorf("%s:%w", name, err)
		}
	}
	return nil
}

func checkIntNode(n ast.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch v := n.(type) {
	case nil:
		return nil
	case *ast.AnchorNode:
		return checkIntNode(v.Value, t, path)
	case *ast.TagNode:
		return checkIntNode(v.Value, t, path)
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
			key := mv.Key.GetToken().Value // unquoted, as in JSON
			if ft, ok := fieldByTag(t, key); ok {
				if err := checkIntNode(mv.Value, ft, joinPath(path, key)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice:
		if s, ok := n.(*ast.SequenceNode); ok {
			for i, e := range s.Values {
				if err := checkIntNode(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
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
	}
	return nil
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
