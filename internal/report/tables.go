package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/servesim/servesim/internal/metrics"
)

// This file builds the report's tables (run summary, error bars, SLO,
// latency, failure reasons, faults) from the runs' results.

// summaryTable is the table of every run's counts and throughputs.
func summaryTable(runs []Run) tableView {
	t := tableView{Caption: "Run", Head: []string{""}}
	for _, r := range runs {
		t.Head = append(t.Head, r.Name)
	}
	row := func(label string, sub bool, f func(*metrics.Result) string) {
		rv := rowView{Label: label, Sub: sub}
		for i := range runs {
			rv.Cells = append(rv.Cells, f(&runs[i].Summary))
		}
		t.Rows = append(t.Rows, rv)
	}
	row("Requests total", false, func(r *metrics.Result) string { return itoa(r.RequestsTotal) })
	row("finished", true, func(r *metrics.Result) string { return itoa(r.Finished) })
	row("rejected", true, func(r *metrics.Result) string { return itoa(r.Rejected) })
	row("failed", true, func(r *metrics.Result) string { return itoa(r.Failed) })
	row("truncated", true, func(r *metrics.Result) string { return itoa(r.Truncated) })
	row("Simulated time (s)", false, func(r *metrics.Result) string { return ftoa(r.SimTimeS, 3) })
	row("Request throughput (req/s, whole run)", false, func(r *metrics.Result) string { return ftoa(r.ThroughputRPS, 3) })
	row("Input tokens", false, func(r *metrics.Result) string { return itoa(r.InputTokens) })
	row("from prefix cache", true, func(r *metrics.Result) string { return itoa(r.CachedTokens) })
	row("Output tokens", false, func(r *metrics.Result) string { return itoa(r.OutputTokens) })
	row("Input throughput (tok/s, whole run)", false, func(r *metrics.Result) string { return ftoa(r.InputTokS, 2) })
	row("Output throughput (tok/s, whole run)", false, func(r *metrics.Result) string { return ftoa(r.OutputTokS, 2) })
	row("Preemptions", false, func(r *metrics.Result) string { return itoa(r.Preemptions) })
	row("Re-prefills", false, func(r *metrics.Result) string { return itoa(r.Reprefills) })
	row("Handoff retries", false, func(r *metrics.Result) string { return itoa(r.Retries) })
	if slices.ContainsFunc(runs, func(r Run) bool { return len(r.Summary.PinnedKV) > 0 }) {
		row("Pinned KV peak (blocks)", false, func(r *metrics.Result) string {
			peak := 0
			for _, p := range r.PinnedKV {
				peak = max(peak, p.PeakBlocks)
			}
			return strconv.Itoa(peak)
		})
	}
	if slices.ContainsFunc(runs, func(r Run) bool { return r.Summary.Speculative != nil }) {
		spec := func(f func(*metrics.SpecResult) string) func(*metrics.Result) string {
			return func(r *metrics.Result) string {
				if r.Speculative == nil {
					return "-"
				}
				return f(r.Speculative)
			}
		}
		row("Speculative acceptance rate (%)", false, spec(func(s *metrics.SpecResult) string { return ftoa(100*s.AcceptanceRate, 2) }))
		row("mean accepted length", true, spec(func(s *metrics.SpecResult) string { return ftoa(s.MeanAcceptedLength, 3) }))
		row("tokens per step (per sequence)", true, spec(func(s *metrics.SpecResult) string { return ftoa(s.TokensPerStep, 3) }))
		row("draft share of step time (%)", true, spec(func(s *metrics.SpecResult) string { return ftoa(100*s.DraftShare, 2) }))
	}
	if slices.ContainsFunc(runs, func(r Run) bool { return r.Summary.Swap != nil }) {
		swap := func(f func(*metrics.SwapResult) string) func(*metrics.Result) string {
			return func(r *metrics.Result) string {
				if r.Swap == nil {
					return "-"
				}
				return f(r.Swap)
			}
		}
		row("Swap preemption (legacy): swap-outs / recomputed", false, swap(func(w *metrics.SwapResult) string {
			return itoa(w.SwapOuts) + " / " + itoa(w.Fallbacks)
		}))
		row("GB out / in", true, swap(func(w *metrics.SwapResult) string {
			return ftoa(float64(w.BytesOut)/1e9, 2) + " / " + ftoa(float64(w.BytesIn)/1e9, 2)
		}))
		row("mean copy out / in (ms)", true, swap(func(w *metrics.SwapResult) string { return ftoa(w.OutMeanMs, 3) + " / " + ftoa(w.InMeanMs, 3) }))
	}
	for _, tier := range []string{"host", "disk"} {
		find := func(r *metrics.Result) *metrics.TierResult {
			for k := range r.KVTiers {
				if r.KVTiers[k].Tier == tier {
					return &r.KVTiers[k]
				}
			}
			return nil
		}
		if !slices.ContainsFunc(runs, func(r Run) bool { return find(&r.Summary) != nil }) {
			continue
		}
		cell := func(f func(*metrics.TierResult) string) func(*metrics.Result) string {
			return func(r *metrics.Result) string {
				if tr := find(r); tr != nil {
					return f(tr)
				}
				return "-"
			}
		}
		row("KV tier "+tier+": prompt tokens loaded", false, cell(func(t *metrics.TierResult) string { return itoa(t.HitTokens) }))
		row("mean load (ms)", true, cell(func(t *metrics.TierResult) string { return ftoa(t.LoadMeanMs, 3) }))
		row("GB read / written", true, cell(func(t *metrics.TierResult) string {
			return ftoa(float64(t.BytesRead)/1e9, 2) + " / " + ftoa(float64(t.BytesWritten)/1e9, 2)
		}))
		row("chunks held / capacity", true, cell(func(t *metrics.TierResult) string { return itoa(t.ChunksHeld) + " / " + itoa(t.ChunksCapacity) }))
	}
	return t
}

// barsTable shows a run's intervals: statistic, value and [lo, hi].
func barsTable(name string, b *ErrorBars, compare bool) tableView {
	caption := fmt.Sprintf("Error bars (%s %% nominal)", ftoa(100*b.Coverage, 0))
	if compare {
		caption += ": " + name
	}
	if b.Sources != "" {
		caption += "; " + b.Sources
	}
	t := tableView{Caption: caption, Head: []string{"", "value", "interval"}}
	for _, st := range b.Stats {
		t.Rows = append(t.Rows, rowView{Label: st.Metric, Cells: []string{ftoa(st.Value, 3), ftoa(st.Lo, 3) + " – " + ftoa(st.Hi, 3)}})
	}
	for _, st := range b.NA {
		t.Rows = append(t.Rows, rowView{Label: st.Metric, Cells: []string{"n/a", st.Why}})
	}
	return t
}

func sloTable(runs []Run) tableView {
	if !slices.ContainsFunc(runs, func(r Run) bool { return r.Summary.SLO != nil }) {
		return tableView{}
	}
	t := tableView{Caption: "SLO", Head: []string{""}}
	for _, r := range runs {
		t.Head = append(t.Head, r.Name)
	}
	row := func(label string, f func(*metrics.SLOResult) string) {
		rv := rowView{Label: label}
		for i := range runs {
			v := "-"
			if s := runs[i].Summary.SLO; s != nil {
				v = f(s)
			}
			rv.Cells = append(rv.Cells, v)
		}
		t.Rows = append(t.Rows, rv)
	}
	bound := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	row("TTFT / TPOT / E2E bounds (ms)", func(s *metrics.SLOResult) string {
		return bound(s.TTFTMs) + " / " + bound(s.TPOTMs) + " / " + bound(s.E2EMs)
	})
	na := func(f func(*metrics.SLOResult) string) func(*metrics.SLOResult) string {
		return func(s *metrics.SLOResult) string {
			if s.Attainment == nil {
				return "n/a"
			}
			return f(s)
		}
	}
	row("Met", na(func(s *metrics.SLOResult) string { return itoa(*s.Met) }))
	row("Attainment (%)", na(func(s *metrics.SLOResult) string { return ftoa(*s.Attainment*100, 2) }))
	row("Goodput (req/s, met / duration)", na(func(s *metrics.SLOResult) string { return ftoa(*s.GoodputRPS, 3) }))
	// Targets, in the order of the first run that has them.
	for _, r := range runs {
		if r.Summary.SLO == nil || len(r.Summary.SLO.Targets) == 0 {
			continue
		}
		for k, tg := range r.Summary.SLO.Targets {
			label := fmt.Sprintf("Target p%d %s ≤ %g ms", tg.Percentile, metricLabel(tg.Metric), tg.MaxMs)
			row(label, func(s *metrics.SLOResult) string {
				if k >= len(s.Targets) {
					return "-"
				}
				v := s.Targets[k]
				verdict := "met"
				if !v.Met {
					verdict = "MISSED"
				}
				if v.ValueMs == nil {
					verdict = "MISSED (no samples)"
				}
				return v.ValueString(1) + " " + verdict
			})
		}
		break
	}
	return t
}

func metricLabel(m metrics.Metric) string {
	switch m {
	case metrics.TTFT, metrics.TPOT, metrics.ITL, metrics.E2E:
		b := []byte(m)
		for i := range b {
			b[i] -= 'a' - 'A'
		}
		return string(b)
	}
	return string(m)
}

// latencyRows lists the latency metrics of a Result in table order; side
// labels the first four with where they are measured ("" for no label).
func latencyRows(r *metrics.Result, side string) []struct {
	name string
	s    metrics.Stat
} {
	if side != "" {
		side = " (" + side + ")"
	}
	rows := []struct {
		name string
		s    metrics.Stat
	}{
		{"TTFT" + side, r.TTFT}, {"TPOT" + side, r.TPOT}, {"ITL" + side, r.ITL}, {"E2E" + side, r.E2E},
	}
	return append(rows, []struct {
		name string
		s    metrics.Stat
	}{
		{"Queue delay", r.QueueDelay}, {"Handoff wait", r.HandoffWait},
		{"Decode capacity wait", r.CapacityWait}, {"KV transfer", r.Transfer},
	}...)
}

func latencyTable(r *metrics.Result) tableView {
	t := tableView{Caption: "Latency (ms), finished requests", Head: []string{"", "count", "mean", "p50", "p90", "p95", "p99", "max"}}
	side := r.LatencySide
	if side == "" {
		side = "engine"
	}
	rows := latencyRows(r, side)
	if r.EngineTTFT != nil && r.EngineTPOT != nil {
		// A front-end run: the engine-side TTFT and TPOT beside the client's.
		rows = append(rows[:4:4], append([]struct {
			name string
			s    metrics.Stat
		}{{"TTFT (engine)", *r.EngineTTFT}, {"TPOT (engine)", *r.EngineTPOT}}, rows[4:]...)...)
	}
	for _, m := range rows {
		rv := rowView{Label: m.name, Cells: []string{itoa(m.s.Count)}}
		for _, v := range []float64{m.s.Mean, m.s.P50, m.s.P90, m.s.P95, m.s.P99, m.s.Max} {
			rv.Cells = append(rv.Cells, ms(v, m.s.Count))
		}
		t.Rows = append(t.Rows, rv)
	}
	return t
}

func latencyCompare(runs []Run) tableView {
	t := tableView{Caption: "Latency (ms), finished requests", Head: []string{""}}
	for _, r := range runs {
		t.Head = append(t.Head, r.Name)
	}
	stats := []struct {
		name string
		f    func(metrics.Stat) float64
	}{
		{"mean", func(s metrics.Stat) float64 { return s.Mean }},
		{"p50", func(s metrics.Stat) float64 { return s.P50 }},
		{"p90", func(s metrics.Stat) float64 { return s.P90 }},
		{"p99", func(s metrics.Stat) float64 { return s.P99 }},
	}
	// Runs may differ in where latencies are measured: label the rows only
	// when they agree.
	side := runs[0].Summary.LatencySide
	if side == "" {
		side = "engine"
	}
	for i := range runs {
		if s := runs[i].Summary.LatencySide; s != side && !(s == "" && side == "engine") {
			side = ""
		}
	}
	for k, m := range latencyRows(&runs[0].Summary, side) {
		for j, st := range stats {
			rv := rowView{Label: m.name + " " + st.name, Sub: j > 0}
			if j > 0 {
				rv.Label = st.name
			}
			for i := range runs {
				s := latencyRows(&runs[i].Summary, side)[k].s
				rv.Cells = append(rv.Cells, ms(st.f(s), s.Count))
			}
			t.Rows = append(t.Rows, rv)
		}
	}
	return t
}

// maxReasons is the most reasons listed per outcome; the rest are summed
// in one row.
const maxReasons = 12

// reasonsTable lists rejection and failure reasons with their counts per
// run: per outcome, the maxReasons most frequent over all runs (ties in
// key order), then one row summing the others.
func reasonsTable(runs []Run) tableView {
	t := tableView{Caption: "Rejection and failure reasons", Head: []string{""}}
	for _, r := range runs {
		t.Head = append(t.Head, r.Name)
	}
	for _, kind := range []struct {
		name string
		m    func(*metrics.Result) map[string]int64
		ex   func(*metrics.Result) map[string]string
	}{
		{"rejected", func(r *metrics.Result) map[string]int64 { return r.RejectionReasons }, func(r *metrics.Result) map[string]string { return r.RejectionExamples }},
		{"failed", func(r *metrics.Result) map[string]int64 { return r.FailureReasons }, func(r *metrics.Result) map[string]string { return r.FailureExamples }},
	} {
		total := map[string]int64{}
		for i := range runs {
			for k, v := range kind.m(&runs[i].Summary) {
				total[k] += v
			}
		}
		keys := make([]string, 0, len(total))
		for k := range total {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			if total[a] != total[b] {
				return cmp.Compare(total[b], total[a])
			}
			return cmp.Compare(a, b)
		})
		shown := keys[:min(len(keys), maxReasons)]
		for _, k := range shown {
			rv := rowView{Label: kind.name + ": " + k}
			for i := range runs {
				if ex, ok := kind.ex(&runs[i].Summary)[k]; ok {
					rv.Label += " (e.g. " + ex + ")"
					break
				}
			}
			for i := range runs {
				rv.Cells = append(rv.Cells, itoa(kind.m(&runs[i].Summary)[k]))
			}
			t.Rows = append(t.Rows, rv)
		}
		if rest := keys[len(shown):]; len(rest) > 0 {
			rv := rowView{Label: fmt.Sprintf("%s: %d other reasons", kind.name, len(rest))}
			for i := range runs {
				var n int64
				m := kind.m(&runs[i].Summary)
				for _, k := range rest {
					n += m[k]
				}
				rv.Cells = append(rv.Cells, itoa(n))
			}
			t.Rows = append(t.Rows, rv)
		}
	}
	return t
}

// faultTable lists a run's fault and scaling counts and events.
func faultTable(f *metrics.FaultResult) tableView {
	t := tableView{Caption: fmt.Sprintf("Faults and scaling: %d losses, %d restarts, %d retried, %d re-placed, %d re-prefilled, %d KV loads failed, %d scale-ups, %d scale-downs; %.3f GPU-hours",
		f.Losses, f.Restarts, f.Retried, f.Replaced, f.KVLost, f.LoadFailures, f.ScaleUps, f.ScaleDowns, f.GPUHours), Head: []string{"t (s)", "instance", "event"}}
	for _, e := range f.Events {
		t.Rows = append(t.Rows, rowView{Label: ftoa(e.AtS, 3), Cells: []string{e.Instance, e.Kind}})
	}
	return t
}
