package perf

import (
	"fmt"
	"io"
	"slices"
	"sort"
)

// attnSlice is the (kp, kvd) grid measured at one (pc, n) corner, stored
// densely: t[i*len(kvd)+j] is the time (ns) at kp[i], kvd[j].
type attnSlice struct {
	kp, kvd   []float64
	t         []float64
	kpG, kvdG guide // of kp and kvd
}

// at interpolates bilinearly in (kp, kvd): clamped below each axis,
// extrapolated from the top two samples above it.
func (s *attnSlice) at(kp, kvd float64) float64 {
	i := s.kpG.at(s.kp, kp)
	j := s.kvdG.at(s.kvd, kvd)
	return s.eval(i, j)
}

// eval interpolates at the axis positions i (on kp) and j (on kvd).
func (s *attnSlice) eval(i, j pos) float64 {
	v := s.rowAt(i.lo, j.lo, j.hi, j.t)
	if i.hi != i.lo {
		v += i.t * (s.rowAt(i.hi, j.lo, j.hi, j.t) - v)
	}
	return v
}

// rowAt interpolates along kvd within kp row i.
func (s *attnSlice) rowAt(i, j0, j1 int, tj float64) float64 {
	base := i * len(s.kvd)
	v := s.t[base+j0]
	if j1 != j0 {
		v += tj * (s.t[base+j1] - v)
	}
	return v
}

// attnPC holds every n corner measured at one prefill-chunk value.
type attnPC struct {
	n      []float64
	nG     guide       // of n
	slices []attnSlice // parallel to n
}

// at2 interpolates linearly in n between the two bracketing corners, at
// (kp, kvd[0]) and, when two is set, at (kp, kvd[1]). Axis positions are
// located once and shared by the two points and, when two corners share
// an axis (readAttentionCSV makes equal axes one slice), by the corners.
// Every value is computed by the same expressions as a lookup of its own,
// so it is bit for bit the same.
func (e *attnPC) at2(n, kp float64, kvd *[2]float64, two bool) (v [2]float64) {
	lo, hi, t := e.nG.bracket(e.n, n)
	s := &e.slices[lo]
	i := s.kpG.at(s.kp, kp)
	j0 := s.kvdG.at(s.kvd, kvd[0])
	var j1 pos
	v[0] = s.eval(i, j0)
	if two {
		j1 = s.kvdG.at(s.kvd, kvd[1])
		v[1] = s.eval(i, j1)
	}
	if hi == lo {
		return v
	}
	h := &e.slices[hi]
	if !sameAxis(h.kp, s.kp) {
		i = h.kpG.at(h.kp, kp)
	}
	if !sameAxis(h.kvd, s.kvd) {
		j0 = h.kvdG.at(h.kvd, kvd[0])
		if two {
			j1 = h.kvdG.at(h.kvd, kvd[1])
		}
	}
	v[0] += t * (h.eval(i, j0) - v[0])
	if two {
		v[1] += t * (h.eval(i, j1) - v[1])
	}
	return v
}

// sameAxis reports that a and b are the same stored axis.
func sameAxis(a, b []float64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// attnTable is attention.csv: time of ONE layer's attention kernel by
// (prefill_chunk pc, kv_prefill kp, n_decode n, kv_decode kvd).
//
// The pc axis and, for every pc, the n axis are the values actually
// measured (pc = 0 has n >= 1 only; pc > 0 has n = 0 and the decode counts
// profiled with a prefill). Every (pc, n) corner has its own kp and kvd
// grids. Pure-prefill steps (n = 0) use their own pc axis made of the
// corners that were measured with n = 0, so they never blend with the
// pure-decode (pc = 0) corners.
type attnTable struct {
	pcs     []float64
	pcsG    guide // of pcs
	byPC    []attnPC
	pfPCs   []float64   // pc values with an n = 0 corner
	pfPCsG  guide       // of pfPCs
	prefill []attnSlice // parallel to pfPCs
}

// at returns the attention time in ns of one layer; zero for an empty step.
func (a *attnTable) at(pc, kp float64, n int, kvd float64) float64 {
	if n <= 0 {
		if pc <= 0 || len(a.pfPCs) == 0 {
			return 0
		}
		lo, hi, t := a.pfPCsG.bracket(a.pfPCs, pc)
		v := a.prefill[lo].at(kp, 0)
		if hi != lo {
			v += t * (a.prefill[hi].at(kp, 0) - v)
		}
		return v
	}
	k := [2]float64{kvd}
	return a.at2(pc, kp, n, &k, false)[0]
}

// at2 is [a.at(pc, kp, n, kvd[0]), a.at(pc, kp, n, kvd[1])] (the second
// only when two is set) for n > 0, sharing the axis lookups of the two.
func (a *attnTable) at2(pc, kp float64, n int, kvd *[2]float64, two bool) [2]float64 {
	nf := float64(n)
	lo, hi, t := a.pcsG.bracket(a.pcs, pc)
	v := a.byPC[lo].at2(nf, kp, kvd, two)
	if hi != lo {
		w := a.byPC[hi].at2(nf, kp, kvd, two)
		v[0] += t * (w[0] - v[0])
		if two {
			v[1] += t * (w[1] - v[1])
		}
	}
	return v
}

type attnCell struct {
	t    float64
	line int
}

// readAttentionCSV parses attention.csv into an attnTable (times in ns).
func readAttentionCSV(name string, r io.Reader) (*attnTable, error) {
	tb, err := newTable(name, r, "prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us")
	if err != nil {
		return nil, err
	}
	type corner struct{ pc, n float64 }
	type cell struct{ kp, kvd float64 }
	raw := map[corner]map[cell]attnCell{}
	for err := range tb.Rows() {
		if err != nil {
			return nil, err
		}
		var v [4]float64
		for i, c := range [...]string{"prefill_chunk", "kv_prefill", "n_decode", "kv_decode"} {
			if v[i], err = tb.key(c); err != nil {
				return nil, err
			}
		}
		y, err := tb.timeUs("time_us")
		if err != nil {
			return nil, err
		}
		if v[0] == 0 && v[2] == 0 {
			continue // an empty step has no attention; nothing to look up
		}
		k := corner{v[0], v[2]}
		if raw[k] == nil {
			raw[k] = map[cell]attnCell{}
		}
		c := cell{v[1], v[3]}
		if prev, dup := raw[k][c]; dup {
			return nil, tb.Errorf("duplicate row for prefill_chunk=%g kv_prefill=%g n_decode=%g kv_decode=%g (first on line %d)",
				v[0], v[1], v[2], v[3], prev.line)
		}
		raw[k][c] = attnCell{t: y * usToNs, line: tb.Line()}
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: no data rows", name)
	}

	a := &attnTable{}
	var pcs []float64
	nsByPC := map[float64][]float64{}
	for k := range raw {
		if len(nsByPC[k.pc]) == 0 {
			pcs = append(pcs, k.pc)
		}
		nsByPC[k.pc] = append(nsByPC[k.pc], k.n)
	}
	sort.Float64s(pcs)
	for _, pc := range pcs {
		ns := nsByPC[pc]
		sort.Float64s(ns)
		e := attnPC{n: ns, nG: newGuide(ns), slices: make([]attnSlice, len(ns))}
		for i, n := range ns {
			cells := raw[corner{pc, n}]
			pts := make(map[[2]float64]float64, len(cells))
			for c, v := range cells {
				pts[[2]float64{c.kp, c.kvd}] = v.t
			}
			e.slices[i] = denseSlice(pts)
			if n == 0 {
				a.pfPCs = append(a.pfPCs, pc)
				a.prefill = append(a.prefill, e.slices[i])
			}
		}
		a.pcs = append(a.pcs, pc)
		a.byPC = append(a.byPC, e)
	}
	a.pcsG, a.pfPCsG = newGuide(a.pcs), newGuide(a.pfPCs)
	a.shareAxes()
	return a, nil
}

// shareAxes makes equal kp and kvd axes of different corners one stored
// slice (with one guide), so that a lookup blending two corners locates
// the position on a shared axis once (sameAxis).
func (a *attnTable) shareAxes() {
	type stored struct {
		xs []float64
		g  guide
	}
	seen := map[string]stored{}
	share := func(xs *[]float64, g *guide) {
		key := fmt.Sprint(*xs)
		if s, ok := seen[key]; ok && slices.Equal(s.xs, *xs) {
			*xs, *g = s.xs, s.g
			return
		}
		seen[key] = stored{*xs, *g}
	}
	for i := range a.byPC {
		for j := range a.byPC[i].slices {
			s := &a.byPC[i].slices[j]
			share(&s.kp, &s.kpG)
			share(&s.kvd, &s.kvdG)
		}
	}
}

// denseSlice turns the scattered (kp, kvd) samples of one corner into a full
// grid over the union of their kp and kvd values. Profiles may be ragged
// (the union of two sweeps: some kp rows lack some kvd columns). A missing
// cell is filled, in order of preference, by linear interpolation along its
// kp row when the row brackets it, else along its kvd column when the column
// brackets it, else by the row's clamp/extrapolation rule. Measured cells are
// kept exactly.
func denseSlice(pts map[[2]float64]float64) attnSlice {
	kpSet, kvdSet := map[float64]bool{}, map[float64]bool{}
	for k := range pts {
		kpSet[k[0]], kvdSet[k[1]] = true, true
	}
	s := attnSlice{kp: sortedKeys(kpSet), kvd: sortedKeys(kvdSet)}
	s.t = make([]float64, len(s.kp)*len(s.kvd))
	line := func(fixed float64, alongKP bool) pwl {
		var f pwl
		axis := s.kvd
		if alongKP {
			axis = s.kp
		}
		for _, x := range axis {
			k := [2]float64{fixed, x}
			if alongKP {
				k = [2]float64{x, fixed}
			}
			if v, ok := pts[k]; ok {
				f.xs, f.ys = append(f.xs, x), append(f.ys, v)
			}
		}
		return f
	}
	inside := func(f *pwl, x float64) bool {
		return len(f.xs) >= 2 && x > f.xs[0] && x < f.xs[len(f.xs)-1]
	}
	for i, kp := range s.kp {
		row := line(kp, false)
		for j, kvd := range s.kvd {
			if v, ok := pts[[2]float64{kp, kvd}]; ok {
				s.t[i*len(s.kvd)+j] = v
				continue
			}
			if inside(&row, kvd) {
				s.t[i*len(s.kvd)+j] = row.at(kvd)
				continue
			}
			if col := line(kvd, true); inside(&col, kp) {
				s.t[i*len(s.kvd)+j] = col.at(kp)
				continue
			}
			s.t[i*len(s.kvd)+j] = row.at(kvd)
		}
	}
	s.kpG, s.kvdG = newGuide(s.kp), newGuide(s.kvd)
	return s
}

func sortedKeys(m map[float64]bool) []float64 {
	out := make([]float64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Float64s(out)
	return out
}
