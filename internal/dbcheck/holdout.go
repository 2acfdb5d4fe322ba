package dbcheck

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perfdb"
)

// HoldoutBy splits the held-out GEMM rows: by m range alone, or by m range
// within each dtype or each system.
type HoldoutBy int

const (
	// HoldoutByRange groups rows by the held-out m only.
	HoldoutByRange HoldoutBy = iota
	// HoldoutByDtype groups rows by gemm_dtype, then m.
	HoldoutByDtype
	// HoldoutBySystem groups rows by system, then m.
	HoldoutBySystem
)

// HoldoutRule is one rule's error over a group of held-out rows, in % of
// the measured time (predicted / measured - 1).
type HoldoutRule struct {
	Rule string `json:"rule"`
	// AbsMedian, AbsP90 and AbsMean summarise |error|; Median is the
	// signed median (the rule's bias).
	AbsMedian float64 `json:"abs_median_pct"`
	AbsP90    float64 `json:"abs_p90_pct"`
	AbsMean   float64 `json:"abs_mean_pct"`
	Median    float64 `json:"median_pct"`
	// Closer and Farther count the rows this rule predicts closer to and
	// farther from the measurement than the linear rule does.
	Closer  int `json:"closer_than_linear"`
	Farther int `json:"farther_than_linear"`
}

// HoldoutGroup is the rules' errors over one group of held-out rows.
type HoldoutGroup struct {
	Group string        `json:"group"`
	Rows  int           `json:"rows"`
	Rules []HoldoutRule `json:"rules"`
}

// holdoutRange names the range of a held-out row's axis value v, and
// its lower end for ordering: along m, the grid's own ranges (every
// integer is measured up to 17, steps of 16 to 256, of 256 to 4352, each
// tile boundary from both sides, on most systems); along n or k, one
// range.
func holdoutRange(axis perfdb.GEMMAxis, v int) (string, int) {
	switch {
	case axis == perfdb.AxisN:
		return "n", 0
	case axis == perfdb.AxisK:
		return "k", 0
	case v <= 16:
		return "m 2-16", 2
	case v <= 256:
		return "m 17-256", 17
	case v <= 4353:
		return "m 257-4353", 257
	}
	return "m 4354+", 4354
}

// GEMMHoldout predicts every interior GEMM row of each database from the
// others along axis (perfdb.GEMMHoldout for m, perfdb.GEMMHoldoutAcross
// for n and k) by every rule of perfdb.GEMMRules and summarises the
// errors per group of by (sorted by dtype or system, then range).
// Rows measured at a time <= 0 are skipped.
func GEMMHoldout(dbs []*perfdb.DB, by HoldoutBy, axis perfdb.GEMMAxis) []HoldoutGroup {
	nr := len(perfdb.GEMMRules)
	type key struct {
		prefix, rng string
		lo          int
	}
	errs := map[key][][]float64{}
	for _, db := range dbs {
		rows := perfdb.GEMMHoldoutAcross(db, axis)
		if axis == perfdb.AxisM {
			rows = perfdb.GEMMHoldout(db)
		}
		for _, h := range rows {
			if h.Measured <= 0 {
				continue
			}
			v := h.M
			switch axis {
			case perfdb.AxisN:
				v = h.N
			case perfdb.AxisK:
				v = h.K
			}
			k := key{}
			k.rng, k.lo = holdoutRange(axis, v)
			switch by {
			case HoldoutByDtype:
				k.prefix = h.Dtype
			case HoldoutBySystem:
				k.prefix = h.System
			}
			e := errs[k]
			if e == nil {
				e = make([][]float64, nr)
			}
			for j := range nr {
				e[j] = append(e[j], h.Pred[j]/h.Measured-1)
			}
			errs[k] = e
		}
	}
	keys := make([]key, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.prefix, b.prefix), cmp.Compare(a.lo, b.lo)) })
	out := make([]HoldoutGroup, 0, len(keys))
	for _, k := range keys {
		e := errs[k]
		g := HoldoutGroup{Group: strings.TrimSpace(k.prefix + " " + k.rng), Rows: len(e[0])}
		for j, r := range perfdb.GEMMRules {
			g.Rules = append(g.Rules, summariseRule(r.String(), e[j], e[0]))
		}
		out = append(out, g)
	}
	return out
}

// summariseRule is one rule's HoldoutRule from its errors and the linear
// rule's errors on the same rows.
func summariseRule(rule string, errs, linear []float64) HoldoutRule {
	abs := make([]float64, len(errs))
	r := HoldoutRule{Rule: rule}
	sum := 0.0
	for i, e := range errs {
		abs[i] = math.Abs(e)
		sum += abs[i]
		l := math.Abs(linear[i])
		switch {
		case abs[i] < l-1e-12:
			r.Closer++
		case abs[i] > l+1e-12:
			r.Farther++
		}
	}
	signed := slices.Clone(errs)
	slices.Sort(signed)
	slices.Sort(abs)
	r.AbsMedian = 100 * metrics.Percentile(abs, 50)
	r.AbsP90 = 100 * metrics.Percentile(abs, 90)
	r.AbsMean = 100 * sum / float64(len(errs))
	r.Median = 100 * metrics.Percentile(signed, 50)
	return r
}

// WriteHoldout prints the groups as fixed-width tables, one per group.
func WriteHoldout(w io.Writer, groups []HoldoutGroup) error {
	var b strings.Builder
	b.WriteString("GEMM rows predicted from the rest of their curve; error = predicted / measured - 1, %\n")
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %d rows held out\n", g.Group, g.Rows)
		fmt.Fprintf(&b, "%-16s %10s %8s %9s %9s %9s %9s\n", "rule", "|median| %", "|p90| %", "|mean| %", "median %", "closer", "farther")
		for _, r := range g.Rules {
			fmt.Fprintf(&b, "%-16s %10.2f %8.1f %9.2f %+9.2f %9d %9d\n", r.Rule, r.AbsMedian, r.AbsP90, r.AbsMean, r.Median, r.Closer, r.Farther)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHoldoutWide prints one line per group: its rows and each rule's
// median |error|, %.
func WriteHoldoutWide(w io.Writer, groups []HoldoutGroup) error {
	var b strings.Builder
	b.WriteString("GEMM rows predicted from the rest of their curve; median |predicted / measured - 1|, %\n")
	width := 0
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	fmt.Fprintf(&b, "%-*s %7s", width, "group", "rows")
	for _, r := range perfdb.GEMMRules {
		fmt.Fprintf(&b, " %*s", max(len(r.String()), 7), r)
	}
	b.WriteString("\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "%-*s %7d", width, g.Group, g.Rows)
		for i, r := range g.Rules {
			fmt.Fprintf(&b, " %*.2f", max(len(perfdb.GEMMRules[i].String()), 7), r.AbsMedian)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
