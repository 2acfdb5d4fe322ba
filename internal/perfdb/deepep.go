package perfdb

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
)

// DeepEPNumSMs is the SM count of DeepEP's normal kernels in vLLM 0.19
// (DeepEPAll2AllManagerBase.num_sms, "the DeepEP default"): the rows of
// the normal table at that count are the ones read.
const DeepEPNumSMs = 20

// DeepEPShape is the MoE a DeepEP table row was measured for: hidden size,
// experts per token and routed experts.
type DeepEPShape struct{ Hidden, TopK, Experts int }

// DeepEPTable is AIConfigurator's measured DeepEP dispatch and combine
// times on one node (comm/sglang/<version>/wideep_deepep_ll_perf or
// wideep_deepep_normal_perf): per shape, by tokens a rank. The kernels are
// DeepEP's own whatever serves them (SGLang collected them).
type DeepEPTable struct {
	// Path and Version are the file read and its version folder.
	Path, Version string
	// LowLatency says which kernels: low-latency or normal.
	LowLatency bool
	curves     map[DeepEPShape]*deepEPCurve
}

// deepEPCurve is one shape's dispatch and combine times (ns) over tokens a
// rank, each made non-decreasing in the tokens.
type deepEPCurve struct {
	tokens, dispatch, combine []float64
}

// OpenDeepEP reads the newest DeepEP table of system in fsys (low-latency
// or normal kernels). A system without one gives an error wrapping
// fs.ErrNotExist.
func OpenDeepEP(fsys fs.FS, system string, lowLatency bool) (*DeepEPTable, error) {
	file := "wideep_deepep_normal_perf.parquet"
	if lowLatency {
		file = "wideep_deepep_ll_perf.parquet"
	}
	base := path.Join("data", system, "comm", "sglang")
	vers, err := versions(fsys, base)
	if err != nil {
		return nil, fmt.Errorf("perfdb: %s: no DeepEP tables: %w", system, err)
	}
	sort.Slice(vers, func(i, j int) bool { return compareVersions(vers[i], vers[j]) > 0 })
	for _, v := range vers {
		p := path.Join(base, v, file)
		if _, err := fs.Stat(fsys, p); err != nil {
			continue
		}
		t := &DeepEPTable{Path: p, Version: v, LowLatency: lowLatency, curves: map[DeepEPShape]*deepEPCurve{}}
		if err := t.read(fsys); err != nil {
			return nil, fmt.Errorf("perfdb: %w", err)
		}
		return t, nil
	}
	return nil, fmt.Errorf("perfdb: %s: no version folder under %s holds %s: %w", system, base, file, fs.ErrNotExist)
}

// read loads the one-node rows of the table (normal kernels: at
// DeepEPNumSMs SMs, dispatch and combine each their transmit plus notify
// time).
func (t *DeepEPTable) read(fsys fs.FS) error {
	cols := []column{{name: "node_num", kind: colInt}, {name: "hidden_size", kind: colInt}, {name: "num_token", kind: colInt},
		{name: "num_topk", kind: colInt}, {name: "num_experts", kind: colInt}}
	if t.LowLatency {
		cols = append(cols, column{name: "dispatch_avg_t_us", kind: colFloat}, column{name: "combine_avg_t_us", kind: colFloat})
	} else {
		cols = append(cols, column{name: "dispatch_sms", kind: colInt}, column{name: "dispatch_transmit_us", kind: colFloat},
			column{name: "dispatch_notify_us", kind: colFloat}, column{name: "combine_sms", kind: colInt},
			column{name: "combine_transmit_us", kind: colFloat}, column{name: "combine_notify_us", kind: colFloat})
	}
	type point struct{ tokens, d, c float64 }
	pts := map[DeepEPShape][]point{}
	_, err := readTable(fsys, t.Path, cols, func(r *record) error {
		n := r.num
		if n[0] != 1 {
			return nil
		}
		s := DeepEPShape{Hidden: int(n[1]), TopK: int(n[3]), Experts: int(n[4])}
		p := point{tokens: n[2]}
		if t.LowLatency {
			p.d, p.c = n[5], n[6]
		} else {
			if n[5] != DeepEPNumSMs || n[8] != DeepEPNumSMs {
				return nil
			}
			p.d, p.c = n[6]+n[7], n[9]+n[10]
		}
		if !(p.tokens >= 1) || !(p.d > 0) || !(p.c > 0) {
			return fmt.Errorf("%s: a row of %g tokens has times %g and %g us; want tokens >= 1 and positive times", t.Path, p.tokens, p.d, p.c)
		}
		pts[s] = append(pts[s], p)
		return nil
	})
	if err != nil {
		return err
	}
	if len(pts) == 0 {
		return fmt.Errorf("%s: no one-node rows: %w", t.Path, errors.New("empty table"))
	}
	for s, ps := range pts {
		slices.SortStableFunc(ps, func(a, b point) int {
			switch {
			case a.tokens < b.tokens:
				return -1
			case a.tokens > b.tokens:
				return 1
			}
			return 0
		})
		c := &deepEPCurve{}
		for _, p := range ps {
			if k := len(c.tokens); k > 0 && c.tokens[k-1] == p.tokens {
				continue // a repeated row: the first one
			}
			d, cb := p.d*1e3, p.c*1e3
			if k := len(c.tokens); k > 0 {
				d, cb = max(d, c.dispatch[k-1]), max(cb, c.combine[k-1])
			}
			c.tokens, c.dispatch, c.combine = append(c.tokens, p.tokens), append(c.dispatch, d), append(c.combine, cb)
		}
		t.curves[s] = c
	}
	return nil
}

// Has says whether the table measured shape s.
func (t *DeepEPTable) Has(s DeepEPShape) bool { return t != nil && t.curves[s] != nil }

// At is one dispatch and one combine (ns) of shape s at tokens a rank,
// linear between the measured token counts; false outside them (no
// extrapolation) or for a shape the table lacks.
func (t *DeepEPTable) At(s DeepEPShape, tokens float64) (dispatchNs, combineNs float64, ok bool) {
	c := t.curves[s]
	if c == nil || !(tokens >= c.tokens[0]) || tokens > c.tokens[len(c.tokens)-1] {
		return 0, 0, false
	}
	i := sort.SearchFloat64s(c.tokens, tokens)
	if c.tokens[i] == tokens {
		return c.dispatch[i], c.combine[i], true
	}
	f := (tokens - c.tokens[i-1]) / (c.tokens[i] - c.tokens[i-1])
	return c.dispatch[i-1] + f*(c.dispatch[i]-c.dispatch[i-1]), c.combine[i-1] + f*(c.combine[i]-c.combine[i-1]), true
}
