package config

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// fileError is one problem of a scenario file. line is 0 when the problem
// has no place in the file (a default that conflicts with a set field).
type fileError struct {
	line, col int
	msg       string // "path: what is wrong; the fix"
}

// fileCheck is the result of checking a file against the schema before
// decoding it.
type fileCheck struct {
	errs []fileError
	// pos maps each field path the file sets to its value's position.
	pos map[string][2]int
	// doc is the file's tree with the entries at fault removed, so the
	// rest can be decoded and validated; nil when that is not possible.
	doc ast.Node
	// empty: the file sets nothing (only comments, document markers or
	// null), so it stands for the defaults, as an empty file does.
	empty bool
	// several: the file has empty documents beside the one with content,
	// so it is decoded from doc (the decoder would take the first).
	several bool
}

// checkFile walks the file against Scenario and reports, in file order,
// every unknown key (with the closest valid key at its level), every value
// of the wrong type and every fraction given for an integer field. A file
// that does not parse as YAML returns the parser's error.
func checkFile(data []byte) (*fileCheck, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, err
	}
	fc := &fileCheck{pos: map[string][2]int{}}
	// The documents with content: none stands for the defaults; a second
	// one would be ignored by the decoder, so it is an error.
	var body ast.Node
	for _, d := range f.Docs {
		if d.Body == nil || d.Body.Type() == ast.NullType {
			continue
		}
		if body != nil {
			tok := d.Body.GetToken()
			fc.errs = append(fc.errs, fileError{line: tok.Position.Line, col: tok.Position.Column,
				msg: "a second YAML document: a scenario file holds one; remove the --- and what follows it, or put it in a file of its own"})
			return fc, nil
		}
		body = d.Body
	}
	if body == nil {
		fc.empty = true
		return fc, nil
	}
	fc.several = len(f.Docs) > 1
	removable := true
	var drop []ast.Node
	add := func(n ast.Node, msg string) {
		tok := n.GetToken()
		fc.errs = append(fc.errs, fileError{line: tok.Position.Line, col: tok.Position.Column, msg: msg})
	}
	walkSchema(body, reflect.TypeFor[Scenario](), "", schemaVisitor{
		entry: func(mv *ast.MappingValueNode, path string) {
			if mv.Value == nil {
				return
			}
			if tok := mv.Value.GetToken(); tok != nil && tok.Position != nil {
				fc.pos[path] = [2]int{tok.Position.Line, tok.Position.Column}
			}
		},
		value: func(n ast.Node, t reflect.Type, path string) bool {
			if msg := wrongType(n, t, path); msg != "" {
				add(n, msg)
				drop = append(drop, n)
				return false
			}
			if msg := checkInteger(n, t, path); msg != "" {
				add(n, msg)
				drop = append(drop, n)
				return false
			}
			if msg := checkFloat(n, t, path); msg != "" {
				add(n, msg)
				drop = append(drop, n)
				return false
			}
			return true
		},
		unknown: func(mv *ast.MappingValueNode, parent reflect.Type, path string) {
			msg := path + ": unknown field"
			if near := closestTag(parent, mv.Key.GetToken().Value); near != "" {
				msg += "; did you mean " + near + "?"
			} else {
				msg += " (" + fieldsDoc(path) + " lists the fields)"
			}
			add(mv.Key, msg)
			drop = append(drop, mv)
		},
	})
	for _, n := range drop {
		if !dropEntry(body, n) {
			removable = false
		}
	}
	if removable {
		fc.doc = body
	}
	slices.SortStableFunc(fc.errs, byPosition)
	return fc, nil
}

func byPosition(a, b fileError) int {
	if a.line == 0 || b.line == 0 {
		return cmp.Compare(b.line, a.line) // unplaced last
	}
	return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col))
}

// wrongType says what is wrong when node n cannot hold a value of type t
// ("" when it can): a scalar for a mapping or list, or a scalar the
// decoder cannot convert.
func wrongType(n ast.Node, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, null := n.(*ast.NullNode); null {
		return ""
	}
	got := n.GetToken().Value
	switch t.Kind() {
	case reflect.Struct:
		switch n.(type) {
		case *ast.MappingNode, *ast.MappingValueNode:
			return ""
		}
		return fmt.Sprintf("%s: wrong type: want a mapping, got %s", path, describeNode(n, got))
	case reflect.Slice:
		if _, ok := n.(*ast.SequenceNode); ok {
			return ""
		}
		return fmt.Sprintf("%s: wrong type: want a list, got %s", path, describeNode(n, got))
	case reflect.Interface, reflect.Map:
		return ""
	}
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode:
		return fmt.Sprintf("%s: wrong type: want %s, got %s", path, kindName(t), describeNode(n, got))
	}
	if err := yaml.NodeToValue(n, reflect.New(t).Interface()); err != nil {
		return fmt.Sprintf("%s: wrong type: want %s, got %s", path, kindName(t), got)
	}
	return ""
}

func describeNode(n ast.Node, value string) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	}
	return value
}

// kindName names a Go type the way a scenario author reads it.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "another type"
}

// dropEntry removes from tree the mapping entry whose key or value is n,
// reporting whether it found one to remove.
func dropEntry(tree ast.Node, n ast.Node) bool {
	found := false
	ast.Walk(visitFunc(func(node ast.Node) bool {
		m, ok := node.(*ast.MappingNode)
		if !ok || found {
			return !found
		}
		for i, mv := range m.Values {
			if mv == n || mv.Value == n || mv.Key == n {
				m.Values = slices.Delete(m.Values, i, i+1)
				found = true
				return false
			}
		}
		return true
	}), tree)
	return found
}

type visitFunc func(ast.Node) bool

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if f(n) {
		return f
	}
	return nil
}

// placeErrors gives each validation error (named by its field path) the
// position of that field in the file, or of its closest enclosing field
// the file sets; errors of fields the file does not reach stay unplaced.
func placeErrors(err error, pos map[string][2]int) []fileError {
	var out []fileError
	for _, e := range flatten(err) {
		msg := e.Error()
		fe := fileError{msg: msg}
		path, _, _ := strings.Cut(msg, ": ")
		for p := path; p != ""; p = parentPath(p) {
			if at, ok := pos[p]; ok {
				fe.line, fe.col = at[0], at[1]
				break
			}
		}
		out = append(out, fe)
	}
	return out
}

// parentPath drops the last element of a field path: "a.b[2].c" ->
// "a.b[2]" -> "a.b" -> "a" -> "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// flatten lists the leaves of a tree of joined errors.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// joinFileErrors renders the errors of file name, one a line.
func joinFileErrors(name string, errs []fileError) error {
	out := make([]error, len(errs))
	for i, e := range errs {
		if e.line > 0 {
			out[i] = fmt.Errorf("%s:%d:%d: %s", name, e.line, e.col, e.msg)
		} else {
			out[i] = fmt.Errorf("%s: %s", name, e.msg)
		}
	}
	return errors.Join(out...)
}

// fieldsDoc is the page that lists the fields of the section at path: an
// inline accelerator's in docs/accelerators.md, every other one in
// docs/scenario.md.
func fieldsDoc(path string) string {
	if strings.HasPrefix(path, "accelerators[") {
		return "docs/accelerators.md, Your own accelerator,"
	}
	return "docs/scenario.md"
}
