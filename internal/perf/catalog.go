package perf

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

// Op categories: which table of a profile bundle times an op.
const (
	CategoryDense       = "dense"        // dense.csv, by the step's total tokens
	CategoryPerSequence = "per_sequence" // per_sequence.csv, by the step's sequences
	CategoryAttention   = "attention"    // attention.csv, 4-D
	CategoryMoE         = "moe"          // moe.csv, by tokens and activated experts
)

// Catalog is one architecture's layer catalog (layer-catalogs/<model_type>.yaml):
// the ordered ops of one step and the table each op is timed from.
//
// A step runs Prologue once, then NumLayers times the per-layer sequence
// PreAttn, PostAttn and the MLP (MLPDense for a dense model, MLPMoE for a
// mixture-of-experts one), then Head once. An op may appear several times
// (layernorm runs before attention and before the MLP); each occurrence is
// charged.
type Catalog struct {
	ModelType string
	Prologue  []string
	PreAttn   []string
	PostAttn  []string
	MLPDense  []string
	MLPMoE    []string
	Head      []string
	// Category maps every op of the catalog to one of the Category* values.
	Category map[string]string
}

type catalogYAML struct {
	Sequence struct {
		Prologue []string `yaml:"prologue"`
		PreAttn  []string `yaml:"pre_attn"`
		PostAttn []string `yaml:"post_attn"`
		MLPDense []string `yaml:"mlp_dense"`
		MLPMoE   []string `yaml:"mlp_moe"`
		Head     []string `yaml:"head"`
	} `yaml:"sequence"`
	Catalog map[string]map[string]any `yaml:"catalog"`
}

// catalogDir is where LoadCatalog looks inside its file system.
const catalogDir = "layer-catalogs"

// LoadCatalog reads layer-catalogs/<modelType>.yaml from fsys (for the
// embedded data, assets.FS()). Every op of the sequence must be declared in
// the file's catalog under one of the known categories.
func LoadCatalog(fsys fs.FS, modelType string) (*Catalog, error) {
	if modelType == "" || strings.ContainsAny(modelType, `/\`) {
		return nil, fmt.Errorf("layer catalog: invalid model type %q", modelType)
	}
	name := path.Join(catalogDir, modelType+".yaml")
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		avail, lerr := availableCatalogs(fsys)
		if lerr != nil || len(avail) == 0 {
			return nil, fmt.Errorf("no layer catalog for model type %q: %w", modelType, err)
		}
		return nil, fmt.Errorf("no layer catalog for model type %q (available: %s): %w",
			modelType, strings.Join(avail, ", "), err)
	}
	return parseCatalog(name, modelType, data)
}

func availableCatalogs(fsys fs.FS) ([]string, error) {
	ents, err := fs.ReadDir(fsys, catalogDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".yaml") {
			out = append(out, strings.TrimSuffix(n, ".yaml"))
		}
	}
	sort.Strings(out)
	return out, nil
}

func parseCatalog(name, modelType string, data []byte) (*Catalog, error) {
	var y catalogYAML
	if err := yaml.Unmarshal(data, &y); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Catalog{
		ModelType: modelType,
		Prologue:  y.Sequence.Prologue,
		PreAttn:   y.Sequence.PreAttn,
		PostAttn:  y.Sequence.PostAttn,
		MLPDense:  y.Sequence.MLPDense,
		MLPMoE:    y.Sequence.MLPMoE,
		Head:      y.Sequence.Head,
		Category:  map[string]string{},
	}
	for _, cat := range []string{CategoryDense, CategoryPerSequence, CategoryAttention, CategoryMoE} {
		for op := range y.Catalog[cat] {
			if prev, dup := c.Category[op]; dup {
				return nil, fmt.Errorf("%s: op %q is declared under both %s and %s", name, op, prev, cat)
			}
			c.Category[op] = cat
		}
	}
	if len(c.PreAttn)+len(c.PostAttn)+len(c.MLPDense)+len(c.MLPMoE) == 0 {
		return nil, fmt.Errorf("%s: sequence has no per-layer ops (pre_attn, post_attn, mlp_dense, mlp_moe)", name)
	}
	for _, seq := range [][]string{c.Prologue, c.PreAttn, c.PostAttn, c.MLPDense, c.MLPMoE, c.Head} {
		for _, op := range seq {
			if _, ok := c.Category[op]; !ok {
				return nil, fmt.Errorf("%s: sequence op %q is not declared in the catalog (categories %s, %s, %s, %s)",
					name, op, CategoryDense, CategoryPerSequence, CategoryAttention, CategoryMoE)
			}
		}
	}
	return c, nil
}

// opUse is how many times an op runs in one step.
type opUse struct {
	op       string
	category string
	count    float64
}

// stepOps lists the ops of one step with their multiplicity for a model of
// numLayers layers; moe selects the MoE MLP.
func (c *Catalog) stepOps(numLayers int, moe bool) ([]opUse, error) {
	mlp, kind := c.MLPDense, "mlp_dense"
	if moe {
		mlp, kind = c.MLPMoE, "mlp_moe"
	}
	if len(mlp) == 0 {
		hint := "set Arch.NumExperts for a mixture-of-experts model"
		if moe {
			hint = "it is a dense architecture; leave Arch.NumExperts at 0"
		}
		return nil, fmt.Errorf("layer catalog %s has an empty %s sequence: %s", c.ModelType, kind, hint)
	}
	counts := map[string]float64{}
	var order []string
	add := func(ops []string, times float64) {
		for _, op := range ops {
			if _, seen := counts[op]; !seen {
				order = append(order, op)
			}
			counts[op] += times
		}
	}
	add(c.Prologue, 1)
	for _, seq := range [][]string{c.PreAttn, c.PostAttn, mlp} {
		add(seq, float64(numLayers))
	}
	add(c.Head, 1)
	out := make([]opUse, 0, len(order))
	for _, op := range order {
		out = append(out, opUse{op: op, category: c.Category[op], count: counts[op]})
	}
	return out, nil
}

// Kernels counts the kernels a step launches per the catalog: perLayer is
// the ops of pre_attn, post_attn and the MLP sequence (mlp_moe when moe)
// plus one KV-cache write per attention op; attn is the attention ops'
// share of it (attention and its cache write); perStep is the prologue
// and head ops.
func (c *Catalog) Kernels(moe bool) (perLayer, attn, perStep int) {
	mlp := c.MLPDense
	if moe {
		mlp = c.MLPMoE
	}
	for _, seq := range [][]string{c.PreAttn, c.PostAttn, mlp} {
		for _, op := range seq {
			perLayer++
			if c.Category[op] == CategoryAttention {
				perLayer++
				attn += 2
			}
		}
	}
	return perLayer, attn, len(c.Prologue) + len(c.Head)
}
