package report

import (
	"bufio"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
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
