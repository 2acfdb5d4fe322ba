package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// checkInteger refuses a fraction given for an integer field: the YAML
// decoder would silently truncate max_num_seqs: 1.5. It returns what is
// wrong, or "".
func checkInteger(n ast.Node, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return ""
	}
	var x float64
	switch s := n.(type) {
	case *ast.FloatNode:
		x = s.Value
	case *ast.StringNode:
		f, err := strconv.ParseFloat(s.Value, 64)
		if err != nil {
			return "" // a type mismatch, reported as such
		}
		x = f
	default:
		return ""
	}
	if x != math.Trunc(x) || math.IsInf(x, 0) {
		return fmt.Sprintf("%s: must be a whole number (got %s); integer fields are never rounded", path, n.GetToken().Value)
	}
	// A whole number beyond the field's range would wrap when decoded
	// (seed: 18446744073709551617 ran with another seed).
	lo, hi := intRange(t)
	if x < lo || x >= hi {
		return fmt.Sprintf("%s: %s is out of range (%s)", path, n.GetToken().Value, intRangeText(t))
	}
	return ""
}

// intRange is the range [lo, hi) of an integer kind, as floats (hi is a
// power of two, exact).
func intRange(t reflect.Type) (lo, hi float64) {
	bits := float64(t.Bits())
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return 0, math.Exp2(bits)
	}
	return -math.Exp2(bits - 1), math.Exp2(bits - 1)
}

// intRangeText describes the range of an integer kind exactly.
func intRangeText(t reflect.Type) string {
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "at most " + strconv.FormatUint(^uint64(0)>>(64-bits), 10)
	}
	return fmt.Sprintf("from %d to %d", int64(-1)<<(bits-1), int64(^uint64(0)>>(65-bits)))
}

// checkFloat refuses NaN and the infinities for a float field: every
// float of a scenario must be finite, whatever the field's own check. It
// returns what is wrong, or "".
func checkFloat(n ast.Node, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Float32 && t.Kind() != reflect.Float64 {
		return ""
	}
	switch x := n.(type) {
	case *ast.NanNode:
		return fmt.Sprintf("%s: must be a finite number (got %v)", path, math.NaN())
	case *ast.InfinityNode:
		return fmt.Sprintf("%s: must be a finite number (got %v)", path, x.Value)
	}
	return ""
}

// schemaVisitor is told, while walkSchema walks a YAML tree against the Go
// type it decodes into, of every mapping entry of a known field, of every
// node under a known field (with the field's type and path; returning
// false skips what lies below it) and of every entry whose key the type
// does not have. Each callback may be nil.
type schemaVisitor struct {
	entry   func(mv *ast.MappingValueNode, path string)
	value   func(n ast.Node, t reflect.Type, path string) bool
	unknown func(mv *ast.MappingValueNode, parent reflect.Type, path string)
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
	case *ast.AliasNode:
		return // the anchored node is checked where it is defined
	}
	if v.value != nil && !v.value(n, t, path) {
		return
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
			if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
				continue // "<<: *anchor" merges a mapping checked where it is defined
			}
			key := mv.Key.GetToken().Value // unquoted, as in JSON
			if ft, ok := fieldByTag(t, key); ok {
				if v.entry != nil {
					v.entry(mv, joinPath(path, key))
				}
				walkSchema(mv.Value, ft, joinPath(path, key), v)
			} else if v.unknown != nil {
				v.unknown(mv, t, joinPath(path, key))
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
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == key {
			return f.Type, true
		}
		if tag == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			if ft, ok := fieldByTag(f.Type, key); ok {
				return ft, true
			}
		}
	}
	return nil, false
}
