package report

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/servesim/servesim/internal/metrics"
)

// InstanceInfo names one instance of a run, for legends and tables.
type InstanceInfo struct {
	Index int    // instance index, as in Record.PrefillInstance and Sample
	Group string // instance group name
	Role  string // mixed, prefill or decode
}

// Run is one simulated run to report: its summary and the data collected
// while it ran.
type Run struct {
	// Name labels the run: the scenario name for `servesim run`, the
	// handoff policy for `servesim compare`.
	Name    string
	Summary metrics.Result
	// Data holds the streamed latencies and time series; nil draws empty
	// charts.
	Data *Collector
	// Instances names the instances; sampled instances missing here are
	// labelled by index.
	Instances []InstanceInfo
	// ErrorBars are the run's intervals (servesim run --error-bars); nil
	// shows none.
	ErrorBars *ErrorBars
}

// ErrorBars are the intervals of a run's statistics at a nominal coverage.
type ErrorBars struct {
	Coverage float64 // nominal coverage, e.g. 0.9
	// Sources says what the intervals combine (step band, seed replicas).
	Sources string
	Stats   []Interval
	// NA lists statistics without an interval and why, e.g. goodput
	// without per-request SLO bounds.
	NA []Interval
}

// Interval is one statistic's value and interval; for ErrorBars.NA, Why
// says why there is none.
type Interval struct {
	Metric        string
	Value, Lo, Hi float64
	Why           string
}

// Write renders runs as one self-contained HTML page (inline CSS, charts
// as inline SVG, no scripts, no external resources) titled title. One run
// gives the report of `servesim run`; several are shown side by side (a
// comparison table, grouped outcome bars and overlaid CDFs) followed by
// each run's details. The bytes depend only on the arguments.
func Write(w io.Writer, title string, runs []Run) error {
	if len(runs) == 0 {
		return errors.New("report: no runs to write")
	}
	for _, r := range runs {
		if r.Data == nil {
			continue
		}
		if err := r.Data.Err(); err != nil {
			return err
		}
	}
	pg, err := build(title, runs)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := page.Execute(bw, pg); err != nil {
		return fmt.Errorf("report: writing HTML: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: writing HTML: %w", err)
	}
	return nil
}

// The view: plain values the template prints.

type pageView struct {
	Title    string
	Subtitle string
	Compare  bool
	Stopped  []stopView
	Setup    []setupView // what each run simulated (model, hardware, latency source, workload)
	Summary  tableView   // counters (one value column per run)
	Latency  []tableView // latency statistics: one table per run, or one comparison table
	SLO      tableView   // empty when no run has an SLO
	Bars     []tableView // error bars, one table per run that has them
	Outcomes template.HTML
	Reasons  tableView
	CDFs     []template.HTML
	Runs     []runView
}

type stopView struct{ Name, Text string }

// setupView is a run's description (metrics.Result.Simulated): the same
// lines as the text summary's header, so the report names the latency
// source and its calibration (e.g. PyTorch-derived) as the summary does.
type setupView struct {
	Name  string
	Lines []string
}

type tableView struct {
	Caption string
	Head    []string
	Rows    []rowView
}

type rowView struct {
	Label string
	Cells []string
	Sub   bool // indented sub-row
}

type runView struct {
	Name      string
	Open      bool
	Latency   tableView // per-run latency table (compare only)
	Pinned    tableView
	Faults    tableView
	Instances tableView
	Note      string
	Series    []template.HTML
}

func build(title string, runs []Run) (*pageView, error) {
	pg := &pageView{Title: title, Compare: len(runs) > 1}
	if pg.Compare {
		pg.Subtitle = strconv.Itoa(len(runs)) + " runs side by side"
	} else {
		pg.Subtitle = "run " + runs[0].Name
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Name
		if r.Summary.Stopped != "" {
			pg.Stopped = append(pg.Stopped, stopView{r.Name, r.Summary.Stopped})
		}
		if len(r.Summary.Simulated) > 0 {
			pg.Setup = append(pg.Setup, setupView{r.Name, r.Summary.Simulated})
		}
	}
	pg.Summary = summaryTable(runs)
	pg.SLO = sloTable(runs)
	for _, r := range runs {
		if r.ErrorBars != nil {
			pg.Bars = append(pg.Bars, barsTable(r.Name, r.ErrorBars, pg.Compare))
		}
	}
	if pg.Compare {
		pg.Latency = []tableView{latencyCompare(runs)}
	} else {
		pg.Latency = []tableView{latencyTable(&runs[0].Summary)}
	}
	var err error
	if pg.Outcomes, err = outcomeChart(runs); err != nil {
		return nil, err
	}
	pg.Reasons = reasonsTable(runs)
	if pg.CDFs, err = cdfCharts(runs); err != nil {
		return nil, err
	}
	for i := range runs {
		rv, err := runDetails(&runs[i])
		if err != nil {
			return nil, err
		}
		rv.Open = i == 0
		if pg.Compare {
			rv.Latency = latencyTable(&runs[i].Summary)
		}
		pg.Runs = append(pg.Runs, rv)
	}
	return pg, nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ftoa(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// ms formats a latency in ms with fewer decimals as it grows; "-" when the
// metric has no samples.
func ms(v float64, n int64) string {
	switch {
	case n == 0:
		return "-"
	case math.Abs(v) >= 1e5:
		return ftoa(v, 0)
	case math.Abs(v) >= 1e3:
		return ftoa(v, 1)
	}
	return ftoa(v, 3)
}

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
	row("Retries", false, func(r *metrics.Result) string { return itoa(r.Retries) })
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

func outcomeChart(runs []Run) (template.HTML, error) {
	cats := make([]string, len(runs))
	groups := []barGroup{{name: "finished"}, {name: "rejected"}, {name: "failed"}}
	for i, r := range runs {
		cats[i] = r.Name
		groups[0].values = append(groups[0].values, float64(r.Summary.Finished))
		groups[1].values = append(groups[1].values, float64(r.Summary.Rejected))
		groups[2].values = append(groups[2].values, float64(r.Summary.Failed))
	}
	for i := range groups {
		groups[i].color = outcomeColors[i]
	}
	return barChart("Request outcomes", "requests", cats, groups)
}

// cdfCharts draws the TTFT, TPOT and E2E CDFs, one line per run.
func cdfCharts(runs []Run) ([]template.HTML, error) {
	var out []template.HTML
	for m := range numMetrics {
		lines := make([]line, len(runs))
		lo, hi := math.Inf(1), 0.0
		for i, r := range runs {
			if len(runs) > 1 {
				lines[i].name = r.Name
			}
			if r.Data == nil {
				continue
			}
			lines[i].pts = r.Data.lat[m].cdf()
			for _, p := range lines[i].pts {
				lo, hi = min(lo, p.x), max(hi, p.x)
			}
		}
		unit, scale := "ms", 1.0
		if hi >= 1e4 {
			unit, scale = "s", 1e-3
		}
		logX := lo > 0 && hi/lo >= 100
		for i := range lines {
			pts := make([]point, len(lines[i].pts))
			for k, p := range lines[i].pts {
				pts[k] = point{p.x * scale, p.y}
			}
			lines[i].pts = pts
		}
		title := metricNames[m] + " CDF"
		if logX {
			title += " (log scale)"
		}
		c := lineChart{
			title:  title,
			xLabel: metricNames[m] + " (" + unit + ")",
			yLabel: "fraction of finished requests",
			lines:  lines,
			logX:   logX,
			yMax:   1,
			empty:  "no finished requests",
		}
		if m == metricTPOT {
			c.empty = "no finished request with two or more tokens"
		}
		svg, err := c.svg()
		if err != nil {
			return nil, err
		}
		out = append(out, svg)
	}
	return out, nil
}

// seriesCharts describes the per-instance time-series charts, in order.
var seriesCharts = [numFields]struct{ title, yLabel string }{
	fieldRunning:  {"Running", "sequences"},
	fieldWaiting:  {"Waiting", "requests"},
	fieldHandoff:  {"Handoff queue", "requests"},
	fieldKVUsed:   {"KV used", "blocks"},
	fieldKVPinned: {"KV pinned (held for handoff)", "blocks"},
	fieldKVCached: {"KV cached (prefix-cache blocks)", "blocks"},
	fieldLinkUtil: {"KV link utilisation (peak of each point)", "% of NIC bandwidth"},
	fieldAlive:    {"Instances serving per group (dashed: faults and scaling events)", "instances"},
}

func instanceName(info []InstanceInfo, idx int) (label, group, role string) {
	for _, in := range info {
		if in.Index == idx {
			label = "#" + strconv.Itoa(idx) + " " + in.Group
			if in.Role != "" && in.Role != in.Group {
				label += " (" + in.Role + ")"
			}
			return label, in.Group, in.Role
		}
	}
	return "#" + strconv.Itoa(idx), "", ""
}

// chartPoints are the points of field f's chart for one instance: each
// bucket's mean, except for the link utilisation, in percent, where it is
// the bucket's peak. Transfers are short bursts: a mean would hide the
// peaks the instance table reports.
func chartPoints(s *series, f int) []point {
	pts := make([]point, len(s.buckets))
	for k := range s.buckets {
		b := &s.buckets[k]
		y := b.mean(f)
		if f == fieldLinkUtil {
			y = b.max[f] * 100
		}
		pts[k] = point{x: float64(b.t0+b.t1) / 2e9, y: y}
	}
	return pts
}

func runDetails(r *Run) (runView, error) {
	rv := runView{Name: r.Name}
	if len(r.Summary.PinnedKV) > 0 {
		rv.Pinned = tableView{Caption: "Pinned KV on prefill instances (blocks)", Head: []string{"instance", "peak", "mean"}}
		for _, p := range r.Summary.PinnedKV {
			rv.Pinned.Rows = append(rv.Pinned.Rows, rowView{Label: strconv.Itoa(p.Instance), Cells: []string{strconv.Itoa(p.PeakBlocks), ftoa(p.MeanBlocks, 1)}})
		}
	}
	var sers []*series
	if r.Data != nil {
		sers = r.Data.instances()
	}
	rv.Instances = tableView{
		Caption: "Instances (peaks over the run, exact)",
		Head:    []string{"instance", "group", "role", "KV blocks", "running", "waiting", "handoff queue", "KV used", "KV pinned", "link util"},
	}
	width := int64(1)
	for _, s := range sers {
		_, group, role := instanceName(r.Instances, s.instance)
		used := ftoa(s.peak[fieldKVUsed], 0)
		if s.kvTotal > 0 {
			used += " (" + ftoa(s.peak[fieldKVUsed]*100/float64(s.kvTotal), 1) + " %)"
		}
		rv.Instances.Rows = append(rv.Instances.Rows, rowView{Label: strconv.Itoa(s.instance), Cells: []string{
			group, role, strconv.Itoa(s.kvTotal),
			ftoa(s.peak[fieldRunning], 0), ftoa(s.peak[fieldWaiting], 0), ftoa(s.peak[fieldHandoff], 0),
			used, ftoa(s.peak[fieldKVPinned], 0), ftoa(s.peak[fieldLinkUtil]*100, 1) + " %",
		}})
		width = max(width, s.width)
	}
	if width > 1 {
		rv.Note = fmt.Sprintf("Each point is the mean of %d consecutive samples (the series is downsampled to at most %d points per instance); the table above gives exact peaks.", width, maxPoints)
	}
	for f := range numFields {
		if f == fieldAlive {
			continue // drawn per group below, with faults
		}
		lines := make([]line, len(sers))
		for i, s := range sers {
			lines[i].name, _, _ = instanceName(r.Instances, s.instance)
			lines[i].pts = chartPoints(s, f)
		}
		c := lineChart{
			title:  seriesCharts[f].title,
			xLabel: "simulated time (s)",
			yLabel: seriesCharts[f].yLabel,
			lines:  lines,
			empty:  "no samples",
		}
		if f == fieldLinkUtil {
			c.yMax = 100
		}
		svg, err := c.svg()
		if err != nil {
			return runView{}, err
		}
		rv.Series = append(rv.Series, svg)
	}
	if fr := r.Summary.Faults; fr != nil {
		rv.Faults = faultTable(fr)
		svg, err := aliveChart(r, sers)
		if err != nil {
			return runView{}, err
		}
		rv.Series = append([]template.HTML{svg}, rv.Series...)
	}
	return rv, nil
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

// aliveChart draws the instances serving in each group over time, with
// the fault and scaling events as dashed vertical marks.
func aliveChart(r *Run, sers []*series) (template.HTML, error) {
	byGroup := map[string][]point{}
	var groups []string
	for _, s := range sers {
		_, group, _ := instanceName(r.Instances, s.instance)
		pts := chartPoints(s, fieldAlive)
		acc, ok := byGroup[group]
		if !ok {
			groups = append(groups, group)
			byGroup[group] = pts
			continue
		}
		for k := range acc {
			if k < len(pts) {
				acc[k].y += pts[k].y
			}
		}
	}
	lines := make([]line, 0, len(groups))
	for _, g := range groups {
		lines = append(lines, line{name: g, pts: byGroup[g]})
	}
	c := lineChart{title: seriesCharts[fieldAlive].title, xLabel: "simulated time (s)", yLabel: seriesCharts[fieldAlive].yLabel, lines: lines, empty: "no samples"}
	for _, e := range r.Summary.Faults.Events {
		c.marks = append(c.marks, e.AtS)
	}
	return c.svg()
}
