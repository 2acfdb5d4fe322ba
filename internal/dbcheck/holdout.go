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

// holdoutRange names the m range of a held-out row: every integer is
// measured up to 17, steps of 16 to 256, of 256 to 4352 (each tile
// boundary from both sides) on most systems, so the ranges are the
// grid's own.
func holdoutRange(m int) string {
	switch {
	case m <= 16:
		return "m 2-16"
	case m <= 256:
		return "m 17-256"
	case m <= 4353:
		return "m 257-4353"
	}
	return "m 4354+"
}

// GEMMHoldout predicts every interior GEMM row of each database from the
// others (perfdb.GEMMHoldout) by every rule of perfdb.GEMMRules and
// summarises the errors per group of by (sorted by dtype or system, then
// m range ascending). Rows
// measured at a time <= 0 are skipped.
func GEMMHoldout(dbs []*perfdb.DB, by HoldoutBy) []HoldoutGroup {
	nr := len(perfdb.GEMMRules)
	type acc struct {
		errs [][]float64
	}
	accs := map[string]*acc{}
	var order []string
	for _, db := range dbs {
		for _, h := range perfdb.GEMMHoldout(db) {
			if h.Measured <= 0 {
				continue
			}
			key := holdoutRange(h.M)
			switch by {
			case HoldoutByDtype:
				key = h.Dtype + " " + key
			case HoldoutBySystem:
				key = h.System + " " + key
			}
			a := accs[key]
			if a == nil {
				a = &acc{errs: make([][]float64, nr)}
				accs[key] = a
				order = append(order, key)
			}
			for j := range nr {
				a.errs[j] = append(a.errs[j], h.Pred[j]/h.Measured-1)
			}
		}
	}
	// by the group's prefix (dtype or system), then the range's lower end
	slices.SortStableFunc(order, func(a, b string) int {
		pa, ra := splitGroup(a)
		pb, rb := splitGroup(b)
		return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(rangeLow(ra), rangeLow(rb)))
	})
	out := make([]HoldoutGroup, 0, len(order))
	for _, key := range order {
		a := accs[key]
		g := HoldoutGroup{Group: key, Rows: len(a.errs[0])}
		for j, r := range perfdb.GEMMRules {
			g.Rules = append(g.Rules, summariseRule(r.String(), a.errs[j], a.errs[0]))
		}
		out = append(out, g)
	}
	return out
}

// splitGroup splits a group name into its prefix and its m range.
func splitGroup(name string) (prefix, rng string) {
	i := strings.LastIndex(name, "m ")
	return name[:i], name[i:]
}

// rangeLow is the lower end of a holdoutRange name.
func rangeLow(name string) int {
	var lo int
	if _, err := fmt.Sscanf(name, "m %d", &lo); err != nil {
		return 0
	}
	return lo
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
	b.WriteString("GEMM rows predicted from the rest of their (n, k) curve; error = predicted / measured - 1, %\n")
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
