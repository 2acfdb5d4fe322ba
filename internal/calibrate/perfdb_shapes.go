package calibrate

import (
	"fmt"
	"sort"

	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perfdb"
)

// ServingModels are the models whose per-GPU layer shapes select the
// database rows a calibration is fitted and checked on: the embedded
// models when the embedded calibrations were fitted. The list is fixed so
// that adding a model to the catalog changes neither a fit nor the check
// of an embedded calibration.
var ServingModels = []string{
	"Qwen/Qwen3-30B-A3B-Instruct-2507",
	"Qwen/Qwen3-32B",
	"meta-llama/Llama-3.1-70B",
	"meta-llama/Llama-3.1-8B",
	"microsoft/Phi-mini-MoE-instruct",
	"mistralai/Mixtral-8x7B-v0.1",
}

// ServingTPs are the tensor-parallel degrees whose per-GPU layer shapes
// select the GEMM rows (see ServingGEMMShapes).
var ServingTPs = []int{1, 2, 4, 8}

// ServingAttentionShapes returns the per-GPU (query heads, KV heads, head
// size) of the attention of every model of ServingModels at a tensor-parallel
// degree of ServingTPs that divides its heads (KV heads max(1,
// kv_heads/tp), as the roofline shards them).
func ServingAttentionShapes() (map[[3]int]bool, error) {
	out := map[[3]int]bool{}
	for _, name := range ServingModels {
		c, err := model.Load(model.Builtin(), name)
		if err != nil {
			return nil, fmt.Errorf("calibrate: serving shapes: %w", err)
		}
		heads, kv, hd := int(c.NumHeads), int(c.NumKVHeads), int(c.HeadDim)
		if kv == 0 {
			kv = heads
		}
		if hd == 0 && heads > 0 {
			hd = int(c.HiddenSize) / heads
		}
		for _, tp := range ServingTPs {
			if heads%tp == 0 {
				out[[3]int{heads / tp, max(1, kv/tp), hd}] = true
			}
		}
	}
	return out, nil
}

// ServingGEMMShapes returns the (N, K) of every linear layer a serving step
// of a model of ServingModels runs on one GPU at a tensor-parallel degree of
// ServingTPs that divides its heads: qkv_proj, o_proj, and for a dense
// model gate_up_proj and down_proj (an MoE model's experts are the MoE
// table's), and lm_head; sorted, without repeats.
func ServingGEMMShapes() ([][2]int, error) {
	seen := map[[2]int]bool{}
	for _, name := range ServingModels {
		c, err := model.Load(model.Builtin(), name)
		if err != nil {
			return nil, fmt.Errorf("calibrate: serving shapes: %w", err)
		}
		h, heads, kv, hd := int(c.HiddenSize), int(c.NumHeads), int(c.NumKVHeads), int(c.HeadDim)
		if kv == 0 {
			kv = heads
		}
		if hd == 0 && heads > 0 {
			hd = h / heads
		}
		for _, tp := range ServingTPs {
			if heads%tp != 0 {
				continue
			}
			q, k := heads/tp, max(1, kv/tp)
			add := func(n, kk int) {
				if n > 0 && kk > 0 {
					seen[[2]int{n, kk}] = true
				}
			}
			add((q+2*k)*hd, h)          // qkv_proj
			add(h, q*hd)                // o_proj
			add(int(c.VocabSize)/tp, h) // lm_head
			if c.NumExperts == 0 {
				inter := int(c.IntermediateSize) / tp
				add(2*inter, h) // gate_up_proj
				add(h, inter)   // down_proj
			}
		}
	}
	out := make([][2]int, 0, len(seen))
	for nk := range seen {
		out = append(out, nk)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out, nil
}

// gemmGrid is the set of the database's (N, K) grid points a serving
// step's GEMMs lie between: for every ServingGEMMShapes shape, the
// measured N values just below and above its N (the same one when it was
// measured) crossed with those around its K. These are the rows a GEMM
// of a real model is interpolated from; the rest of the grid (N or K of
// 32, 65536, ...) are shapes no layer of those models has.
func gemmGrid(rows []perfdb.GEMMRow) (map[[2]int]bool, error) {
	shapes, err := ServingGEMMShapes()
	if err != nil {
		return nil, err
	}
	nset, kset := map[int]bool{}, map[int]bool{}
	for _, g := range rows {
		nset[g.N], kset[g.K] = true, true
	}
	axis := func(m map[int]bool) []int {
		out := make([]int, 0, len(m))
		for v := range m {
			out = append(out, v)
		}
		sort.Ints(out)
		return out
	}
	ns, ks := axis(nset), axis(kset)
	around := func(grid []int, v int) []int {
		i := sort.SearchInts(grid, v) // first >= v
		switch {
		case len(grid) == 0:
			return nil
		case i < len(grid) && grid[i] == v:
			return []int{v}
		case i == 0:
			return []int{grid[0]}
		case i == len(grid):
			return []int{grid[i-1]}
		}
		return []int{grid[i-1], grid[i]}
	}
	out := map[[2]int]bool{}
	for _, nk := range shapes {
		for _, n := range around(ns, nk[0]) {
			for _, k := range around(ks, nk[1]) {
				out[[2]int{n, k}] = true
			}
		}
	}
	return out, nil
}
