package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/metrics"
)

// Row is the outcome of one grid point.
type Row struct {
	// Point is the point's index in the full grid (see Grid.Coords).
	Point int
	// Values are the point's grid values, in axis order.
	Values []any
	// Result is the run summary (zero when Err is set). A run stopped by
	// the eager handoff policy has Result.Stopped set and is not an error.
	Result metrics.Result
	// Err is why the point could not be simulated (for example, the model
	// does not fit the memory the point gives it); "" when it ran.
	Err string
	// Internal marks an Err that is a bug (a panicking simulation), not a
	// property of the point.
	Internal bool
}

// Fixed columns of every output, before the grid columns.
const (
	ColPoint     = "point"
	ColNumPoints = "num_points"
	ColSweepID   = "sweep_id"
)

type metricCol struct {
	name string
	get  func(r *metrics.Result) string
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// metricCols flattens metrics.Result: counts, throughput, every latency
// distribution (count, mean, min, p50, p90, p95, p99, max) and SLO
// attainment. Names follow the summary JSON (see README, Outputs).
var metricCols = func() []metricCol {
	cols := []metricCol{
		{"requests_total", func(r *metrics.Result) string { return itoa(r.RequestsTotal) }},
		{"finished", func(r *metrics.Result) string { return itoa(r.Finished) }},
		{"rejected", func(r *metrics.Result) string { return itoa(r.Rejected) }},
		{"failed", func(r *metrics.Result) string { return itoa(r.Failed) }},
		{"truncated", func(r *metrics.Result) string { return itoa(r.Truncated) }},
		{"sim_time_s", func(r *metrics.Result) string { return ftoa(r.SimTimeS) }},
		{"throughput_rps", func(r *metrics.Result) string { return ftoa(r.ThroughputRPS) }},
		{"input_tokens", func(r *metrics.Result) string { return itoa(r.InputTokens) }},
		{"output_tokens", func(r *metrics.Result) string { return itoa(r.OutputTokens) }},
		{"cached_tokens", func(r *metrics.Result) string { return itoa(r.CachedTokens) }},
		{"input_tok_s", func(r *metrics.Result) string { return ftoa(r.InputTokS) }},
		{"output_tok_s", func(r *metrics.Result) string { return ftoa(r.OutputTokS) }},
	}
	dists := []struct {
		name string
		get  func(r *metrics.Result) *metrics.Stat
	}{
		{"ttft_ms", func(r *metrics.Result) *metrics.Stat { return &r.TTFT }},
		{"tpot_ms", func(r *metrics.Result) *metrics.Stat { return &r.TPOT }},
		{"itl_ms", func(r *metrics.Result) *metrics.Stat { return &r.ITL }},
		{"e2e_ms", func(r *metrics.Result) *metrics.Stat { return &r.E2E }},
		{"queue_delay_ms", func(r *metrics.Result) *metrics.Stat { return &r.QueueDelay }},
		{"handoff_wait_ms", func(r *metrics.Result) *metrics.Stat { return &r.HandoffWait }},
		{"decode_capacity_wait_ms", func(r *metrics.Result) *metrics.Stat { return &r.CapacityWait }},
		{"transfer_ms", func(r *metrics.Result) *metrics.Stat { return &r.Transfer }},
	}
	for _, d := range dists {
		get := d.get
		cols = append(cols,
			metricCol{d.name + "_count", func(r *metrics.Result) string { return itoa(get(r).Count) }},
			metricCol{d.name + "_mean", func(r *metrics.Result) string { return ftoa(get(r).Mean) }},
			metricCol{d.name + "_min", func(r *metrics.Result) string { return ftoa(get(r).Min) }},
			metricCol{d.name + "_p50", func(r *metrics.Result) string { return ftoa(get(r).P50) }},
			metricCol{d.name + "_p90", func(r *metrics.Result) string { return ftoa(get(r).P90) }},
			metricCol{d.name + "_p95", func(r *metrics.Result) string { return ftoa(get(r).P95) }},
			metricCol{d.name + "_p99", func(r *metrics.Result) string { return ftoa(get(r).P99) }},
			metricCol{d.name + "_max", func(r *metrics.Result) string { return ftoa(get(r).Max) }},
		)
	}
	slo := func(f func(s *metrics.SLOResult) string) func(r *metrics.Result) string {
		return func(r *metrics.Result) string {
			if r.SLO == nil {
				return ""
			}
			return f(r.SLO)
		}
	}
	cols = append(cols,
		metricCol{"preemptions", func(r *metrics.Result) string { return itoa(r.Preemptions) }},
		metricCol{"reprefills", func(r *metrics.Result) string { return itoa(r.Reprefills) }},
		metricCol{"retries", func(r *metrics.Result) string { return itoa(r.Retries) }},
		metricCol{"slo_ttft_ms", slo(func(s *metrics.SLOResult) string { return ftoa(s.TTFTMs) })},
		metricCol{"slo_tpot_ms", slo(func(s *metrics.SLOResult) string { return ftoa(s.TPOTMs) })},
		metricCol{"slo_e2e_ms", slo(func(s *metrics.SLOResult) string { return ftoa(s.E2EMs) })},
		metricCol{"slo_met", slo(func(s *metrics.SLOResult) string { return optInt(s.Met) })},
		metricCol{"slo_attainment", slo(func(s *metrics.SLOResult) string { return optFloat(s.Attainment) })},
		metricCol{"goodput_rps", slo(func(s *metrics.SLOResult) string { return optFloat(s.GoodputRPS) })},
		metricCol{"slo_targets_met", slo(func(s *metrics.SLOResult) string {
			if len(s.Targets) == 0 {
				return ""
			}
			for _, t := range s.Targets {
				if !t.Met {
					return "false"
				}
			}
			return "true"
		})},
		metricCol{"pinned_kv_peak_blocks", func(r *metrics.Result) string {
			if len(r.PinnedKV) == 0 {
				return ""
			}
			peak := 0
			for _, p := range r.PinnedKV {
				peak = max(peak, p.PeakBlocks)
			}
			return strconv.Itoa(peak)
		}},
		metricCol{"pinned_kv_mean_blocks", func(r *metrics.Result) string {
			if len(r.PinnedKV) == 0 {
				return ""
			}
			sum := 0.0
			for _, p := range r.PinnedKV {
				sum += p.MeanBlocks
			}
			return ftoa(sum / float64(len(r.PinnedKV)))
		}},
		metricCol{"gpus", func(r *metrics.Result) string {
			gs := groups(r)
			if gs == nil {
				return ""
			}
			n := 0
			for _, g := range gs {
				n += g.Count * g.TP * max(g.PP, 1) * max(g.DP, 1)
			}
			return strconv.Itoa(n)
		}},
		metricCol{"kv_blocks", func(r *metrics.Result) string {
			gs := groups(r)
			if len(gs) == 1 {
				return strconv.Itoa(gs[0].KVBlocks)
			}
			parts := make([]string, len(gs))
			for i, g := range gs {
				parts[i] = fmt.Sprintf("%s=%d", g.Name, g.KVBlocks)
			}
			return strings.Join(parts, "; ")
		}},
		metricCol{"failure_reasons", func(r *metrics.Result) string { return reasons(r.FailureReasons) }},
		metricCol{"rejection_reasons", func(r *metrics.Result) string { return reasons(r.RejectionReasons) }},
		metricCol{"stopped", func(r *metrics.Result) string { return r.Stopped }},
	)
	return cols
}()

// groups returns the instance groups of a run's description (nil for a
// point that did not run).
func groups(r *metrics.Result) []assemble.GroupDescription {
	if d, ok := r.Scenario.(assemble.Description); ok {
		return d.Groups
	}
	return nil
}

// reasons renders a reason count map as "reason=n; reason=n", sorted.
func reasons(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, "; ")
}

// MetricColumns are the names of the flattened summary columns, in output
// order (after the grid columns, before "error").
func MetricColumns() []string {
	names := make([]string, len(metricCols))
	for i, c := range metricCols {
		names[i] = c.name
	}
	return names
}

// specCols are the speculative decoding columns (docs/speculative.md,
// Outputs), written after the metric columns by sweeps that speculate
// (Plan.Speculates); empty for a point that does not.
var specCols = func() []metricCol {
	spec := func(f func(s *metrics.SpecResult) float64) func(r *metrics.Result) string {
		return func(r *metrics.Result) string {
			if r.Speculative == nil {
				return ""
			}
			return ftoa(f(r.Speculative))
		}
	}
	return []metricCol{
		{"spec_acceptance_rate", spec(func(s *metrics.SpecResult) float64 { return s.AcceptanceRate })},
		{"spec_mean_accepted_length", spec(func(s *metrics.SpecResult) float64 { return s.MeanAcceptedLength })},
		{"spec_tokens_per_step", spec(func(s *metrics.SpecResult) float64 { return s.TokensPerStep })},
		{"spec_draft_share", spec(func(s *metrics.SpecResult) float64 { return s.DraftShare })},
	}
}()

// SpecColumns are the names of the speculative decoding columns, in
// output order (after the metric columns, before "error", when the sweep
// speculates).
func SpecColumns() []string { return colNames(specCols) }

// TierColumns are the names of the KV tier, swap and pinned-KV offload
// columns (docs/outputs.md), in output order (after the speculative
// columns, before "error", when the sweep has kv_tiers).
func TierColumns() []string { return colNames(tierCols) }

func colNames(cols []metricCol) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return names
}

// Extras are the optional column groups of an output, written only when
// some run may fill them so that other outputs keep their columns.
type Extras struct {
	// Spec adds the speculative decoding columns (SpecColumns).
	Spec bool
	// Tiers adds the KV tier, swap and offload columns (TierColumns).
	Tiers bool
}

// ExtrasOf returns the column groups some of the results fill.
func ExtrasOf(rs []*metrics.Result) Extras {
	var x Extras
	for _, r := range rs {
		x.Spec = x.Spec || r.Speculative != nil
		x.Tiers = x.Tiers || len(r.KVTiers) > 0 || r.Swap != nil || r.OffloadPeakBytes > 0
	}
	return x
}

// ResultColumns are the names of the columns MetricRecord writes: the
// metric columns, then the groups of x.
func ResultColumns(x Extras) []string { return colNames(x.cols()) }

func (x Extras) cols() []metricCol {
	cols := metricCols[:len(metricCols):len(metricCols)]
	if x.Spec {
		cols = append(cols, specCols...)
	}
	if x.Tiers {
		cols = append(cols, tierCols...)
	}
	return cols
}

// MetricRecord renders a run's summary as the cells of ResultColumns(x).
func MetricRecord(r *metrics.Result, x Extras) []string {
	cols := x.cols()
	rec := make([]string, len(cols))
	for i, c := range cols {
		rec[i] = c.get(r)
	}
	return rec
}

// Columns is the CSV header of a sweep over g: point, num_points,
// sweep_id, one column per grid axis (its path), the metric columns, the
// optional groups of x, and error.
func Columns(g *Grid, x Extras) []string {
	cols := []string{ColPoint, ColNumPoints, ColSweepID}
	cols = append(cols, g.Header()...)
	cols = append(cols, ResultColumns(x)...)
	return append(cols, "error")
}

// tierCols are, per tier below the GPU (host, disk), what it held and
// moved (metrics.TierResult), then swap preemption (metrics.SwapResult)
// and the pinned handoff KV offloaded to host memory; a cell is empty
// when its run has no such tier, no swapping or no offload.
var tierCols = func() []metricCol {
	var cols []metricCol
	for _, tier := range []string{"host", "disk"} {
		tc := func(name string, f func(t *metrics.TierResult) string) metricCol {
			return metricCol{"kv_" + tier + "_" + name, func(r *metrics.Result) string {
				for i := range r.KVTiers {
					if r.KVTiers[i].Tier == tier {
						return f(&r.KVTiers[i])
					}
				}
				return ""
			}}
		}
		cols = append(cols,
			tc("requests", func(t *metrics.TierResult) string { return itoa(t.Requests) }),
			tc("load_mean_ms", func(t *metrics.TierResult) string { return ftoa(t.LoadMeanMs) }),
			tc("hit_tokens", func(t *metrics.TierResult) string { return itoa(t.HitTokens) }),
			tc("loads", func(t *metrics.TierResult) string { return itoa(t.Loads) }),
			tc("bytes_read", func(t *metrics.TierResult) string { return itoa(t.BytesRead) }),
			tc("bytes_written", func(t *metrics.TierResult) string { return itoa(t.BytesWritten) }),
			tc("chunks_stored", func(t *metrics.TierResult) string { return itoa(t.ChunksStored) }),
			tc("chunks_evicted", func(t *metrics.TierResult) string { return itoa(t.ChunksEvicted) }),
			tc("chunks_dropped", func(t *metrics.TierResult) string { return itoa(t.ChunksDropped) }),
			tc("chunks_held", func(t *metrics.TierResult) string { return itoa(t.ChunksHeld) }),
			tc("chunks_capacity", func(t *metrics.TierResult) string { return itoa(t.ChunksCapacity) }),
		)
	}
	sw := func(name string, f func(s *metrics.SwapResult) string) metricCol {
		return metricCol{name, func(r *metrics.Result) string {
			if r.Swap == nil {
				return ""
			}
			return f(r.Swap)
		}}
	}
	cols = append(cols,
		sw("swap_outs", func(s *metrics.SwapResult) string { return itoa(s.SwapOuts) }),
		sw("swap_ins", func(s *metrics.SwapResult) string { return itoa(s.SwapIns) }),
		sw("swap_recompute_fallbacks", func(s *metrics.SwapResult) string { return itoa(s.Fallbacks) }),
		sw("swap_bytes_out", func(s *metrics.SwapResult) string { return itoa(s.BytesOut) }),
		sw("swap_bytes_in", func(s *metrics.SwapResult) string { return itoa(s.BytesIn) }),
		sw("swap_out_mean_ms", func(s *metrics.SwapResult) string { return ftoa(s.OutMeanMs) }),
		sw("swap_in_mean_ms", func(s *metrics.SwapResult) string { return ftoa(s.InMeanMs) }),
		sw("swap_peak_blocks", func(s *metrics.SwapResult) string { return strconv.Itoa(s.PeakBlocks) }),
		sw("swap_capacity_blocks", func(s *metrics.SwapResult) string { return strconv.Itoa(s.CapacityBlocks) }),
		metricCol{"offload_peak_bytes", func(r *metrics.Result) string { return itoa(r.OffloadPeakBytes) }},
		metricCol{"offload_deferred", func(r *metrics.Result) string { return itoa(r.OffloadDeferred) }},
	)
	return cols
}()

// Extras returns the optional column groups of the plan's output: Spec
// when it Speculates, Tiers when the base scenario or a grid axis sets
// kv_tiers. It depends on the plan only, so every shard of a sweep has
// the same header.
func (p *Plan) Extras() Extras {
	x := Extras{Spec: p.Speculates(), Tiers: p.Base != nil && p.Base.KVTiers != nil}
	for _, a := range p.Grid.Axes {
		if len(a.Path) > 0 && a.Path[0].Key == "kv_tiers" {
			x.Tiers = true
		}
	}
	return x
}

// Speculates reports whether the sweep's runs may speculate: the base
// scenario has an engine.speculative block (scenario-wide or in a group)
// or a grid axis sets one. Its CSV then has the speculative decoding
// columns. It depends on the plan only, so every shard of a sweep has the
// same header.
func (p *Plan) Speculates() bool {
	if p.Base != nil {
		if p.Base.Engine.Speculative != nil {
			return true
		}
		for _, g := range p.Base.Instances {
			if g.Engine != nil && g.Engine.Speculative != nil {
				return true
			}
		}
	}
	for _, a := range p.Grid.Axes {
		for _, st := range a.Path {
			if st.Key == "speculative" {
				return true
			}
		}
	}
	return false
}

// Writer writes sweep rows as CSV or JSON. Rows must be written in point
// order (Plan.Run emits them so); the output then depends only on the grid,
// the scenario and the points, not on how or where they were run.
type Writer struct {
	w      io.Writer
	csv    *csv.Writer
	json   bool
	plan   *Plan
	n      int
	header bool
}

// NewCSVWriter returns a Writer of CSV: a header (see Columns), then one
// row per point. Floats use the shortest representation that round-trips.
func NewCSVWriter(w io.Writer, p *Plan) *Writer {
	return &Writer{w: w, csv: csv.NewWriter(w), plan: p}
}

// NewJSONWriter returns a Writer of a JSON array with one object per point,
// one object per line: {"point", "num_points", "sweep_id", "values": {path:
// value, ...}, "summary": {...}, "error"?}. "summary" is the same object as
// `servesim run --summary-json`.
func NewJSONWriter(w io.Writer, p *Plan) *Writer {
	return &Writer{w: w, json: true, plan: p}
}

// Write writes one row.
func (w *Writer) Write(r Row) error {
	if w.json {
		obj, err := w.plan.jsonRow(r)
		if err != nil {
			return err
		}
		sep := ",\n"
		if w.n == 0 {
			sep = "[\n"
		}
		w.n++
		_, err = io.WriteString(w.w, sep+string(obj))
		return err
	}
	if !w.header {
		w.header = true
		if err := w.csv.Write(Columns(w.plan.Grid, w.plan.Extras())); err != nil {
			return err
		}
	}
	w.n++
	return w.csv.Write(w.plan.csvRow(r))
}

// Close finishes the output (the header of an empty CSV, the end of the
// JSON array) and flushes it; it does not close the underlying writer.
func (w *Writer) Close() error {
	if w.json {
		end := "\n]\n"
		if w.n == 0 {
			end = "[]\n"
		}
		_, err := io.WriteString(w.w, end)
		return err
	}
	if !w.header {
		w.header = true
		if err := w.csv.Write(Columns(w.plan.Grid, w.plan.Extras())); err != nil {
			return err
		}
	}
	w.csv.Flush()
	return w.csv.Error()
}

func (p *Plan) csvRow(r Row) []string {
	rec := []string{strconv.Itoa(r.Point), strconv.Itoa(p.Len()), p.ID}
	for _, v := range r.Values {
		rec = append(rec, FormatValue(v))
	}
	x := p.Extras()
	if r.Err != "" {
		rec = append(rec, make([]string, len(x.cols()))...)
	} else {
		rec = append(rec, MetricRecord(&r.Result, x)...)
	}
	return append(rec, r.Err)
}

func (p *Plan) jsonRow(r Row) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"point":%d,"num_points":%d,"sweep_id":%q,"values":{`, r.Point, p.Len(), p.ID)
	for k, a := range p.Grid.Axes {
		if k > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(a.Path.String())
		if err != nil {
			return nil, fmt.Errorf("point %d: encode %s: %w", r.Point, a.Path, err)
		}
		val, err := json.Marshal(r.Values[k])
		if err != nil {
			return nil, fmt.Errorf("point %d: encode %s: %w", r.Point, a.Path, err)
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteString("}")
	if r.Err != "" {
		e, err := json.Marshal(r.Err)
		if err != nil {
			return nil, fmt.Errorf("point %d: encode error: %w", r.Point, err)
		}
		fmt.Fprintf(&b, `,"error":%s}`, e)
		return b.Bytes(), nil
	}
	sum, err := json.Marshal(r.Result)
	if err != nil {
		return nil, fmt.Errorf("point %d: encode summary: %w", r.Point, err)
	}
	b.WriteString(`,"summary":`)
	b.Write(sum)
	b.WriteString("}")
	return b.Bytes(), nil
}

// optInt and optFloat print a value that may not exist as "" when it
// does not.
func optInt(v *int64) string {
	if v == nil {
		return ""
	}
	return itoa(*v)
}

func optFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return ftoa(*v)
}
