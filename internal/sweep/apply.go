package sweep

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/servesim/servesim/internal/config"
)

// Assignment sets one scenario field: Value (any JSON-marshalable value,
// typically decoded from YAML) at Path.
type Assignment struct {
	Path  Path
	Value any
}

// Apply returns a new scenario: base with every assignment applied in
// order. It marshals base to a generic tree, sets each path, and decodes the
// result strictly with config.Parse, so an unknown field, a wrong type or an
// invalid value is an error exactly as in a scenario file. base is not
// modified. Setting the top-level hardware also moves every instance group
// on the previous scenario accelerator (groups inherit it; see
// inheritHardware).
func Apply(base *config.Scenario, sets ...Assignment) (*config.Scenario, error) {
	root, err := toTree(base)
	if err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	for _, a := range sets {
		if err := CheckPath(a.Path); err != nil {
			return nil, err
		}
		v, err := toTree(a.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: value %v cannot be encoded: %w", a.Path, a.Value, err)
		}
		var old any
		if obj, ok := root.(map[string]any); ok {
			old = obj["hardware"]
		}
		if root, err = set(root, a.Path, v); err != nil {
			return nil, fmt.Errorf("%s: %w", a.Path, err)
		}
		if len(a.Path) == 1 && a.Path[0].Key == "hardware" {
			inheritHardware(root, old)
		}
	}
	data, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	s, err := config.Parse(data, parseName)
	if err != nil {
		return nil, stripParseName(err)
	}
	return s, nil
}

// inheritHardware moves the instance groups that were on the scenario's
// previous accelerator old to its new one: the scenario fills a group's
// hardware from its own when the group names none (config.FillGroups), so
// in a filled scenario a group on the scenario's accelerator is taken to
// inherit it. Groups on another accelerator keep theirs.
func inheritHardware(root tree, old any) {
	obj, ok := root.(map[string]any)
	if !ok {
		return
	}
	groups, _ := obj["instances"].([]any)
	for _, g := range groups {
		if gm, ok := g.(map[string]any); ok && old != nil && gm["hardware"] == old {
			gm["hardware"] = obj["hardware"]
		}
	}
}

// parseName labels the generated document for config.Parse; its position
// prefix (a line in the generated JSON) means nothing to the user and is
// stripped from errors.
const parseName = "\x00sweep-point"

var parseNameRE = regexp.MustCompile("\x00sweep-point(:[0-9]+:[0-9]+)?: ")

func stripParseName(err error) error {
	return fmt.Errorf("%s", parseNameRE.ReplaceAllString(err.Error(), ""))
}
