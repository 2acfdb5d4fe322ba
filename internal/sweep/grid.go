package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Grid is a parameter grid: scenario field paths, each with a list of
// values. Its points are the cartesian product of the axes.
type Grid struct {
	// File labels errors (the grid file's path).
	File string
	// Axes are in file order.
	Axes []Axis
}

// Axis is one grid dimension: a field path and its values.
type Axis struct {
	Path   Path
	Values []any
	// Line and Col locate the path in the grid file; ValuePos locates each
	// value.
	Line, Col int
	ValuePos  []Pos
}

// Pos is a line:column position in the grid file.
type Pos struct{ Line, Col int }

// LoadGrid reads and parses a grid file.
func LoadGrid(path string) (*Grid, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read grid: %w", err)
	}
	return ParseGrid(data, path)
}

// ParseGrid parses a grid file: a YAML mapping from field paths to lists of
// values, e.g.
//
//	workload.time_scale: [1, 0.5]
//	instances[1].count: [1, 2, 3]
//	handoff.policy: [pull, reserve]
//
// A scalar value is an axis with one value. Paths are checked against the
// scenario schema; errors name name:line:col. Values are checked when the
// grid is applied to a scenario (see NewPlan).
func ParseGrid(data []byte, name string) (*Grid, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlErr(name, err)
	}
	g := &Grid{File: name}
	if len(f.Docs) > 1 {
		return nil, fmt.Errorf("%s: a grid file holds one YAML document (got %d)", name, len(f.Docs))
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, fmt.Errorf("%s: empty grid; list scenario field paths with their values, e.g. \"engine.max_num_seqs: [64, 128]\"", name)
	}
	var pairs []*ast.MappingValueNode
	switch b := f.Docs[0].Body.(type) {
	case *ast.MappingNode:
		pairs = b.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{b}
	default:
		pos := position(b)
		return nil, fmt.Errorf("%s:%d:%d: a grid is a mapping from field paths to lists of values, e.g. \"engine.max_num_seqs: [64, 128]\"", name, pos.Line, pos.Col)
	}
	seen := map[string]int{}
	for _, mv := range pairs {
		kp := position(mv.Key)
		var key string
		if err := yaml.NodeToValue(mv.Key, &key); err != nil {
			return nil, fmt.Errorf("%s:%d:%d: field path must be a string: %w", name, kp.Line, kp.Col, err)
		}
		p, err := ParsePath(key)
		if err == nil {
			err = CheckPath(p)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d:%d: %w", name, kp.Line, kp.Col, err)
		}
		if line, dup := seen[p.String()]; dup {
			return nil, fmt.Errorf("%s:%d:%d: field path %q is already listed on line %d", name, kp.Line, kp.Col, p, line)
		}
		seen[p.String()] = kp.Line
		ax := Axis{Path: p, Line: kp.Line, Col: kp.Col}
		nodes := []ast.Node{mv.Value}
		if seq, ok := mv.Value.(*ast.SequenceNode); ok {
			nodes = seq.Values
		}
		for _, n := range nodes {
			vp := position(n)
			var v any
			if err := yaml.NodeToValue(n, &v); err != nil {
				return nil, fmt.Errorf("%s:%d:%d: %s: %w", name, vp.Line, vp.Col, p, err)
			}
			if _, err := json.Marshal(v); err != nil {
				return nil, fmt.Errorf("%s:%d:%d: %s: unsupported value (%w)", name, vp.Line, vp.Col, p, err)
			}
			ax.Values = append(ax.Values, v)
			ax.ValuePos = append(ax.ValuePos, vp)
		}
		if len(ax.Values) == 0 {
			return nil, fmt.Errorf("%s:%d:%d: %s has no values; give at least one", name, kp.Line, kp.Col, p)
		}
		g.Axes = append(g.Axes, ax)
	}
	if g.Len() > maxPoints {
		return nil, fmt.Errorf("%s: the grid has more than %d points; split it into several sweeps", name, maxPoints)
	}
	return g, nil
}

// maxPoints bounds the size of a grid (point indices stay ints everywhere).
const maxPoints = 1 << 40

func position(n ast.Node) Pos {
	if n == nil || n.GetToken() == nil || n.GetToken().Position == nil {
		return Pos{}
	}
	p := n.GetToken().Position
	return Pos{p.Line, p.Column}
}

func yamlErr(name string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tok := ye.GetToken(); tok != nil && tok.Position != nil {
			return fmt.Errorf("%s:%d:%d: %s", name, tok.Position.Line, tok.Position.Column, ye.GetMessage())
		}
		return fmt.Errorf("%s: %s", name, ye.GetMessage())
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Len is the number of points: the product of the axis lengths (1 for a
// grid with no axes).
func (g *Grid) Len() int {
	n := 1
	for _, a := range g.Axes {
		if n > maxPoints/len(a.Values) {
			return maxPoints + 1
		}
		n *= len(a.Values)
	}
	return n
}

// Coords returns, for point i, the index into each axis's values. Points
// are numbered like nested loops in file order: the first axis varies
// slowest, the last fastest.
func (g *Grid) Coords(i int) []int {
	c := make([]int, len(g.Axes))
	for k := len(g.Axes) - 1; k >= 0; k-- {
		n := len(g.Axes[k].Values)
		c[k] = i % n
		i /= n
	}
	return c
}

// Assignments returns the field assignments of point i, in axis order.
func (g *Grid) Assignments(i int) []Assignment {
	c := g.Coords(i)
	as := make([]Assignment, len(g.Axes))
	for k, a := range g.Axes {
		as[k] = Assignment{Path: a.Path, Value: a.Values[c[k]]}
	}
	return as
}

// Header returns the axis paths, the grid's columns in outputs.
func (g *Grid) Header() []string {
	h := make([]string, len(g.Axes))
	for k, a := range g.Axes {
		h[k] = a.Path.String()
	}
	return h
}

// FormatValue renders a grid value for a CSV cell or a message: strings as
// they are, numbers, booleans and null as in JSON, lists and maps as
// compact JSON.
func FormatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// describe renders the assignments of a point as "path=value, ...".
func describe(as []Assignment) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.Path.String() + "=" + FormatValue(a.Value)
	}
	return strings.Join(parts, ", ")
}
