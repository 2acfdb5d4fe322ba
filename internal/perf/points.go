package perf

import (
	"errors"
	"io"
	"io/fs"
	"path"
)

// Point is one measured row of a profile bundle's tables, in nanoseconds,
// for one layer (per-layer ops) or one step (embedding, final_layernorm,
// lm_head, sampler) on one tensor-parallel rank.
type Point struct {
	// Category is the table: CategoryDense, CategoryPerSequence or
	// CategoryAttention.
	Category string
	// Op is the op name (the layer column; OpAttention for attention rows).
	Op string
	// X is the tokens (dense) or sequences (per_sequence) of the row.
	X int
	// PC, KP, N and KVD are the attention coordinates: prefill chunk, prefill
	// KV, decode requests and mean decode KV length.
	PC, KP, N, KVD int
	// Ns is the measured time.
	Ns float64
}

// Batch returns the step a point was measured on, as the predictors see it:
// a dense row is one prefill of X tokens, a per-sequence row X one-token
// decodes, an attention row one prefill chunk of PC tokens after KP cached
// ones together with N decodes of KVD context each.
func (p Point) Batch() Batch {
	switch p.Category {
	case CategoryDense:
		return Batch{PrefillTokens: p.X, PrefillSeqs: 1}
	case CategoryPerSequence:
		return Batch{NumDecode: p.X, DecodeKVSum: int64(p.X), DecodeKVMax: 1, DecodeKVMin: 1}
	}
	b := Batch{PrefillTokens: p.PC, PrefillKV: p.KP, NumDecode: p.N,
		DecodeKVSum: int64(p.N) * int64(p.KVD), DecodeKVMax: p.KVD, DecodeKVMin: p.KVD}
	if p.PC > 0 {
		b.PrefillSeqs = 1
	}
	return b
}

// ReadPoints returns every row of the dense.csv, per_sequence.csv and
// attention.csv tables in the tp<N> folder tpDir of fsys (a path returned by
// FindBundle), in file order: dense, then per-sequence, then attention.
// Missing tables are skipped; attention rows of an empty step (no prefill,
// no decode) are dropped. At least one table must exist.
func ReadPoints(fsys fs.FS, tpDir string) ([]Point, error) {
	var out []Point
	found := 0
	for _, f := range []struct {
		file, cat string
	}{{"dense.csv", CategoryDense}, {"per_sequence.csv", CategoryPerSequence}, {"attention.csv", CategoryAttention}} {
		name := path.Join(tpDir, f.file)
		fh, err := fsys.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		found++
		pts, err := readPointsCSV(name, fh, f.cat)
		fh.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, pts...)
	}
	if found == 0 {
		return nil, &noProfileError{"no dense.csv, per_sequence.csv or attention.csv in " + tpDir}
	}
	return out, nil
}

func readPointsCSV(name string, r io.Reader, cat string) ([]Point, error) {
	var cols []string
	switch cat {
	case CategoryDense:
		cols = []string{"layer", "tokens", "time_us"}
	case CategoryPerSequence:
		cols = []string{"layer", "sequences", "time_us"}
	default:
		cols = []string{"prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us"}
	}
	t, err := newTable(name, r, cols...)
	if err != nil {
		return nil, err
	}
	var out []Point
	for err := range t.Rows() {
		if err != nil {
			return nil, err
		}
		y, err := t.timeUs("time_us")
		if err != nil {
			return nil, err
		}
		p := Point{Category: cat, Ns: y * usToNs}
		if cat == CategoryAttention {
			var v [4]float64
			for i, c := range cols[:4] {
				if v[i], err = t.key(c); err != nil {
					return nil, err
				}
			}
			if v[0] == 0 && v[2] == 0 {
				continue
			}
			p.Op, p.PC, p.KP, p.N, p.KVD = OpAttention, int(v[0]), int(v[1]), int(v[2]), int(v[3])
		} else {
			p.Op = t.Str("layer")
			if p.Op == "" {
				return nil, t.Errorf("column layer is empty")
			}
			x, err := t.key(cols[1])
			if err != nil {
				return nil, err
			}
			p.X = int(x)
		}
		out = append(out, p)
	}
	return out, nil
}
