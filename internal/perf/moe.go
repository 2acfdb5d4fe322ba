package perf

import (
	"fmt"
	"io"
	"math"
)

// moeTable is moe.csv: the whole MoE block of ONE layer on one expert-parallel
// rank, by (tokens, activated_experts). Every activated-experts value has its
// own token grid (a row); lookup is linear in tokens within the two rows
// bracketing the expert count, then linear between them. Both axes clamp
// below their first sample and extrapolate above their last.
type moeTable struct {
	experts  []float64
	expertsG guide // of experts
	rows     []pwl // parallel to experts
}

func (m *moeTable) at(tokens, experts float64) float64 {
	lo, hi, t := m.expertsG.bracket(m.experts, experts)
	v := m.rows[lo].at(tokens)
	if hi != lo {
		v += t * (m.rows[hi].at(tokens) - v)
	}
	return v
}

// readMoECSV parses moe.csv ("tokens,activated_experts,time_us"; an "ep"
// column, written by newer profilers, must be absent or 1).
func readMoECSV(name string, r io.Reader) (*moeTable, error) {
	tb, err := newTable(name, r, "tokens", "activated_experts", "time_us")
	if err != nil {
		return nil, err
	}
	hasEP := tb.Has("ep")
	raw := map[float64][]point{}
	for err := range tb.Rows() {
		if err != nil {
			return nil, err
		}
		if hasEP {
			ep, err := tb.key("ep")
			if err != nil {
				return nil, err
			}
			if ep != 1 {
				continue // grids for other EP degrees are not used
			}
		}
		tok, err := tb.key("tokens")
		if err != nil {
			return nil, err
		}
		ae, err := tb.key("activated_experts")
		if err != nil {
			return nil, err
		}
		y, err := tb.timeUs("time_us")
		if err != nil {
			return nil, err
		}
		raw[ae] = append(raw[ae], point{x: tok, y: y * usToNs, line: tb.Line()})
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: no data rows", name)
	}
	set := map[float64]bool{}
	for ae := range raw {
		set[ae] = true
	}
	m := &moeTable{experts: sortedKeys(set)}
	m.expertsG = newGuide(m.experts)
	for _, ae := range m.experts {
		f, err := newPWL(name, fmt.Sprintf("tokens at activated_experts=%g", ae), raw[ae])
		if err != nil {
			return nil, err
		}
		m.rows = append(m.rows, f)
	}
	return m, nil
}

// ActivatedExperts is the expected number of distinct experts that tokens
// tokens reach when each picks k of e experts uniformly (BALANCED routing):
// e*(1-(1-k/e)^tokens), rounded to the nearest integer and kept within
// [k, e]. Zero tokens activate none.
func ActivatedExperts(tokens, e, k int) int {
	if tokens <= 0 || e <= 0 || k <= 0 {
		return 0
	}
	if k >= e {
		return e
	}
	v := int(math.Round(float64(e) * (1 - math.Pow(1-float64(k)/float64(e), float64(tokens)))))
	return min(max(v, k), e)
}
