package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goccy/go-yaml"
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
	if len(bytes.TrimSpace(data)) > 0 {
		if err := decode(data, s); err != nil {
			// Every unknown key, in file order, rather than the first.
			if errs := unknownKeys(data, name); len(errs) > 0 {
				return nil, errors.Join(errs...)
			}
			return nil, yamlError(name, err)
		}
		if err := checkIntegerFields(data, name); err != nil {
			return nil, err
		}
	}
	if s.Workload.Generated() && s.Workload.Trace == DefaultTrace {
		s.Workload.Trace = ""
	}
	s.FillGroups()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// Marshal renders a scenario as YAML: the fully resolved configuration an
// output carries.
func Marshal(s *Scenario) ([]byte, error) {
	return yaml.Marshal(s)
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
