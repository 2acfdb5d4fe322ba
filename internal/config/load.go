package config

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

//go:embed default.yaml
var defaultScenario []byte

// DefaultYAML is the embedded default scenario file.
func DefaultYAML() []byte { return defaultScenario }

// LoadDefault parses the embedded default scenario.
func LoadDefault() (*Scenario, error) { return Parse(defaultScenario, "default scenario") }

// Source says where a scenario came from; relative paths in it (traces,
// profile roots) are resolved against Dir.
type Source struct {
	File string // "" for the embedded default
	Dir  string
}

// Load reads a scenario file. Unknown fields, wrong types and invalid values
// are errors naming file:line:col or the field, with what would fix them.
func Load(path string) (*Scenario, Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Source{}, fmt.Errorf("read scenario: %w", err)
	}
	s, err := Parse(data, path)
	if err != nil {
		return nil, Source{}, err
	}
	return s, Source{File: path, Dir: filepath.Dir(path)}, nil
}

// Parse decodes scenario YAML on top of the defaults (see Default) and
// validates the result. name labels errors.
func Parse(data []byte, name string) (*Scenario, error) {
	s := Default()
	var errs []fileError
	pos := map[string][2]int{}
	if len(bytes.TrimSpace(data)) > 0 {
		fc, err := checkFile(data)
		if err != nil {
			return nil, yamlError(name, err)
		}
		errs, pos = fc.errs, fc.pos
		switch {
		case fc.empty:
			// Only comments or document markers: the defaults.
		case len(errs) == 0 && !fc.several:
			if err := decode(data, s); err != nil {
				return nil, yamlError(name, err)
			}
		case fc.doc == nil:
			// The entries at fault cannot be set aside: report them.
			return nil, joinFileErrors(name, errs)
		default:
			// Decode the rest to validate it too, so that one run
			// reports every problem of the file.
			if err := decodeNode(fc.doc, s); err != nil {
				return nil, joinFileErrors(name, errs)
			}
		}
	}
	if s.Workload.Generated() && s.Workload.Trace == DefaultTrace {
		s.Workload.Trace = ""
	}
	s.FillGroups()
	errs = append(errs, placeErrors(s.Validate(), pos)...)
	if len(errs) > 0 {
		slices.SortStableFunc(errs, byPosition)
		return nil, joinFileErrors(name, errs)
	}
	return s, nil
}

// Marshal renders a scenario as YAML: the fully resolved configuration an
// output carries.
func Marshal(s *Scenario) ([]byte, error) {
	return yaml.Marshal(s)
}

// decodeNode decodes a checked YAML tree strictly, turning a decoder
// panic into an error.
func decodeNode(n ast.Node, s *Scenario) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (%v)", r)
		}
	}()
	return yaml.NodeToValue(n, s, yaml.Strict())
}

// decode runs the strict YAML decoder, turning a decoder panic on
// malformed input into an error.
func decode(data []byte, s *Scenario) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (%v)", r)
		}
	}()
	return yaml.UnmarshalWithOptions(data, s, yaml.Strict())
}
