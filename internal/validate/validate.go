// Package validate compares servesim against a measured vLLM run: it rebuilds
// the run's scenario from the run's own files (engine settings, hardware,
// workload, arrival times), simulates it, and reports TTFT, TPOT and E2E
// statistics side by side with their relative differences.
//
// A measured run directory holds meta.json (vLLM engine settings and the
// sha256 of the workload file), requests.jsonl (per-request timestamps) and
// llmservingsim-cluster.json (hardware and memory). Both sides use the same
// definitions: TTFT = first token - queued; TPOT = (last - first) /
// (output - 1) for outputs longer than one token; E2E = last - queued.
package validate

import (
	"fmt"
	"io"
	"io/fs"
	"math"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workload"
)

// Options of a validation.
type Options struct {
	// Measured is the measured run directory (os.DirFS or an embedded
	// sub-tree) and Name labels it in messages.
	Measured fs.FS
	Name     string
	// Workload is the replayed trace file; "" looks the run's dataset_hash
	// up among the embedded workloads.
	Workload string
	// Profiles is the profile bundle root; "" uses the embedded bundles.
	Profiles string
	// StepOverheadUs overrides the predictor's step overhead when non-nil.
	StepOverheadUs *float64
	// CollectiveScale overrides predictor.collective_scale when non-nil.
	CollectiveScale *float64
	// Predictor is the step-latency predictor kind ("" or profile, or
	// roofline) and Calibration the roofline's calibration file ("" for
	// the embedded one).
	Predictor, Calibration string
	// MoEDistribution, when set, is the perfdb predictor's moe_perf
	// routing distribution (predictor.moe_distribution).
	MoEDistribution string
	// CheckInvariants turns the invariant checker on.
	CheckInvariants bool
	// RequestsCSV, if set, receives the simulated per-request records.
	RequestsCSV string
	// ErrorBars adds 90 % intervals to the simulated statistics (two more
	// simulations; see errorbars.go).
	ErrorBars bool
	// PlacementReplicas, when positive, replays a run with data-parallel
	// ranks that many more times with the balancer's ties broken at random
	// and reports the statistics' spread (placement.go).
	PlacementReplicas int
	// StepsVs, when set (profile, roofline or perfdb), replays the run
	// once more with every step also timed by that predictor and reports
	// the two latency sources' step times by kind of step (steps.go).
	StepsVs string
}

// Row is one compared statistic.
type Row struct {
	Metric    string  `json:"metric"` // TTFT, TPOT or E2E
	Stat      string  `json:"stat"`   // mean, p50, p90, p95, p99
	Measured  float64 `json:"measured"`
	Simulated float64 `json:"simulated"`
	DiffPct   float64 `json:"diff_pct"`
	// Lo and Hi bound the simulated value's interval and Inside says
	// whether the measured value lies in it (with error bars only).
	Lo     *float64 `json:"lo,omitempty"`
	Hi     *float64 `json:"hi,omitempty"`
	Inside *bool    `json:"inside,omitempty"`
}

// Report is the outcome of a validation. Values are milliseconds.
type Report struct {
	Run           string  `json:"run"`
	Model         string  `json:"model"`
	Hardware      string  `json:"hardware"`
	Requests      int     `json:"requests"`
	Stats         []Row   `json:"stats"`
	MaxAbsDiffPct float64 `json:"max_abs_diff_pct"`
	// KVBlocks is the KV capacity simulated (blocks per instance);
	// KVBlocksRecorded is vLLM's num_gpu_blocks when the run records it
	// (then KVBlocks equals it) and KVBlocksPredicted servesim's own
	// prediction from memory, printed beside it.
	KVBlocks          int `json:"kv_blocks"`
	KVBlocksRecorded  int `json:"kv_blocks_recorded,omitempty"`
	KVBlocksPredicted int `json:"kv_blocks_predicted"`
	// ClientOffsetMs is the client-side time added to the simulated TTFT
	// and E2E when the measured run is client-side (a vllm bench serve
	// result); 0 for engine-side runs.
	ClientOffsetMs float64 `json:"client_offset_ms,omitempty"`
	// Band is the step-error band the intervals come from and Coverage the
	// share of measured statistics inside their interval (error bars only).
	Band     string  `json:"band,omitempty"`
	Coverage float64 `json:"coverage,omitempty"`
	// Failed counts measured requests the client recorded as failed; they
	// are left out of both sides.
	Failed int `json:"failed,omitempty"`
	// Latency is where the simulated step times come from (a profile
	// bundle, or the roofline and its calibration, labelled PyTorch-derived
	// when it is), and Warnings the approximations a run would warn of,
	// e.g. an accelerator borrowing another's calibration.
	Latency  string   `json:"latency"`
	Warnings []string `json:"warnings,omitempty"`
	// Side says where the compared latencies are measured on each side
	// (docs/client.md).
	Side string `json:"latency_side"`
	// QueueDelay compares the queue delay (scheduled - queued: from the
	// engine picking the request up to the scheduler step that first
	// batched it) at the same five statistics. It is extra: the maximum
	// |diff| is over Stats only. Empty for a client-side (bench serve) run,
	// which records no scheduled time.
	QueueDelay []QueueRow `json:"queue_delay,omitempty"`
	// Predictor is the run's step-latency predictor kind; with StepsVs
	// set, Steps compares its step times with that predictor's on the
	// run's own batches, by kind of step (Options.StepsVs).
	Predictor string    `json:"predictor,omitempty"`
	StepsVs   string    `json:"steps_vs,omitempty"`
	Steps     []StepRow `json:"steps,omitempty"`
	// Placement is the spread over replays that differ only in the
	// data-parallel placement (with PlacementReplicas only).
	Placement *PlacementSpread `json:"placement_spread,omitempty"`
}

// QueueNearZeroMs is the measured queue-delay statistic below which a
// percent difference says nothing (a p50 of 0.0 ms is common on a
// lightly loaded server): the difference is given in ms only.
const QueueNearZeroMs = 1.0

// QueueRow is one compared queue-delay statistic (milliseconds). DiffMs is
// simulated - measured; DiffPct is nil when the measured value is below
// QueueNearZeroMs.
type QueueRow struct {
	Stat      string   `json:"stat"`
	Measured  float64  `json:"measured"`
	Simulated float64  `json:"simulated"`
	DiffMs    float64  `json:"diff_ms"`
	DiffPct   *float64 `json:"diff_pct"`
}

// queueRows compares measured and simulated queue delays (ms).
func queueRows(meas, sim []float64) []QueueRow {
	ms, ss := metrics.Stats(meas), metrics.Stats(sim)
	var rows []QueueRow
	for _, st := range []struct {
		name string
		m, s float64
	}{{"mean", ms.Mean, ss.Mean}, {"p50", ms.P50, ss.P50}, {"p90", ms.P90, ss.P90}, {"p95", ms.P95, ss.P95}, {"p99", ms.P99, ss.P99}} {
		// + 0 turns a rounded -0 into 0.
		r := QueueRow{Stat: st.name, Measured: round3(st.m), Simulated: round3(st.s), DiffMs: round3(st.s-st.m) + 0}
		if st.m >= QueueNearZeroMs {
			d := round3((st.s - st.m) / st.m * 100)
			r.DiffPct = &d
		}
		rows = append(rows, r)
	}
	return rows
}

// Run validates one measured run.
func Run(o Options) (*Report, error) {
	s, reqs, m, err := Scenario(o)
	if err != nil {
		return nil, err
	}
	if o.PlacementReplicas > 0 && !balancedGroups(s) {
		return nil, errNoPlacement
	}
	wf, wname, err := findWorkload(o, m)
	if err != nil {
		return nil, err
	}
	ids, err := workload.TokenIDsByID(workload.NewTraceReader(wf, wname))
	wf.Close()
	if err != nil {
		return nil, err
	}
	if _, err := workload.MeasuredSource(reqs, ids); err != nil {
		return nil, err
	}
	s.Workload.Trace = wname
	newSrc := func() (workload.Source, error) { return workload.MeasuredSource(reqs, ids) }
	band, err := errorBand(o.ErrorBars, s)
	if err != nil {
		return nil, err
	}
	rep, err := compare(s, config.Source{}, reqs, newSrc, o.Name, o.RequestsCSV, 0, band, true)
	if err != nil {
		return nil, err
	}
	if o.StepsVs != "" {
		if rep.Steps, err = compareSteps(s, newSrc, o.StepsVs); err != nil {
			return nil, err
		}
		rep.Predictor, rep.StepsVs = string(s.Predictor.Kind), o.StepsVs
	}
	if o.PlacementReplicas <= 0 {
		return rep, nil
	}
	if err := addPlacementSpread(rep, s, config.Source{}, newSrc, 0, o.PlacementReplicas); err != nil {
		return nil, err
	}
	return rep, nil
}

// compare simulates scenario s on the measured requests' workload (a
// fresh source from newSrc per run) and compares the statistics; with a
// band it adds the intervals (addIntervals). offsetMs is added to every simulated TTFT and
// E2E: the client-side share of a client-measured run (see ReadBench).
// With queue set the report also compares the queue delay (the measured
// requests must carry engine-side scheduled times).
func compare(s *config.Scenario, cs config.Source, reqs []workload.MeasuredRequest, newSrc func() (workload.Source, error), name, requestsCSV string, offsetMs float64, band *calibrate.Band, queue bool) (*Report, error) {
	src, err := newSrc()
	if err != nil {
		return nil, err
	}
	built, err := assemble.Build(s, cs)
	if err != nil {
		return nil, err
	}
	built = built.WithSource(func() (workload.Source, io.Closer, error) { return src, io.NopCloser(nil), nil })
	// Capacity may be pinned to the recorded value; the build predicts it
	// anyway.
	predicted := built.Instance(0).PredictedBlocks
	if err := built.Instance(0).PredictErr; err != nil {
		return nil, fmt.Errorf("predicting the KV capacity: %w", err)
	}

	var simTTFT, simTPOT, simE2E, simQueue []float64
	unfinished := 0
	_, err = runner.Run(built, runner.Options{RequestsCSV: requestsCSV, OnRecord: func(r *metrics.Record) {
		if r.Outcome != metrics.Finished {
			unfinished++
			return
		}
		// Engine-side definitions, as vLLM's queued_ts: from pickup.
		simTTFT = append(simTTFT, float64(r.FirstToken-r.Queued)/1e6+offsetMs)
		simE2E = append(simE2E, float64(r.LastToken-r.Queued)/1e6+offsetMs)
		// The engine stamps Scheduled when its scheduler step runs, as
		// vLLM's scheduled_ts.
		simQueue = append(simQueue, float64(r.Scheduled-r.Queued)/1e6)
		if r.Generated > 1 {
			simTPOT = append(simTPOT, float64(r.LastToken-r.FirstToken)/float64(r.Generated-1)/1e6)
		}
	}})
	if err != nil {
		return nil, err
	}
	if unfinished > 0 {
		return nil, fmt.Errorf("%d of %d requests did not finish in the simulation; check the KV capacity settings", unfinished, len(reqs))
	}
	var mTTFT, mTPOT, mE2E []float64
	for _, r := range reqs {
		mTTFT = append(mTTFT, r.TTFT()*1e3)
		mE2E = append(mE2E, r.E2E()*1e3)
		if t, ok := r.TPOT(); ok {
			mTPOT = append(mTPOT, t*1e3)
		}
	}
	desc := built.Describe()
	rep := &Report{Run: name, ClientOffsetMs: offsetMs, Model: s.Model, Hardware: s.Hardware, Requests: len(reqs),
		KVBlocks: built.Instance(0).NumBlocks, KVBlocksRecorded: s.Engine.NumGPUBlocks, KVBlocksPredicted: predicted,
		Latency: desc.Groups[0].Latency, Warnings: desc.Warnings,
		Side: "engine-side on both sides (from queued_ts; servesim from the engine's arrival)"}
	if !queue {
		rep.Side = "vLLM client-side (from the client's send); servesim engine-side plus the client offset"
	}
	for _, mm := range []struct {
		name      string
		meas, sim []float64
	}{{"TTFT", mTTFT, simTTFT}, {"TPOT", mTPOT, simTPOT}, {"E2E", mE2E, simE2E}} {
		ms, ss := metrics.Stats(mm.meas), metrics.Stats(mm.sim)
		for _, st := range []struct {
			name string
			m, s float64
		}{{"mean", ms.Mean, ss.Mean}, {"p50", ms.P50, ss.P50}, {"p90", ms.P90, ss.P90}, {"p95", ms.P95, ss.P95}, {"p99", ms.P99, ss.P99}} {
			d := 0.0
			if st.m != 0 {
				d = (st.s - st.m) / st.m * 100
			}
			rep.Stats = append(rep.Stats, Row{Metric: mm.name, Stat: st.name, Measured: round3(st.m), Simulated: round3(st.s), DiffPct: round3(d)})
			rep.MaxAbsDiffPct = math.Max(rep.MaxAbsDiffPct, math.Abs(round3(d)))
		}
	}
	if queue {
		mQueue := make([]float64, len(reqs))
		for i, r := range reqs {
			mQueue[i] = r.QueueDelay() * 1e3
		}
		rep.QueueDelay = queueRows(mQueue, simQueue)
	}
	if band != nil {
		if err := addIntervals(rep, built, *band, newSrc, offsetMs); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// String renders the side-by-side table.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Validation of %s (%s on %s, %d requests)\n", r.Run, r.Model, r.Hardware, r.Requests)
	if r.Latency != "" {
		fmt.Fprintf(&b, "step latency: %s\n", r.Latency)
	}
	if r.Side != "" {
		fmt.Fprintf(&b, "latencies: %s\n", r.Side)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if r.Band == "" {
		fmt.Fprintf(&b, "%-6s %-5s %14s %14s %9s\n", "metric", "stat", "vLLM (ms)", "servesim (ms)", "diff %")
		for _, row := range r.Stats {
			fmt.Fprintf(&b, "%-6s %-5s %14.2f %14.2f %+9.2f\n", row.Metric, row.Stat, row.Measured, row.Simulated, row.DiffPct)
		}
	} else {
		fmt.Fprintf(&b, "%-6s %-5s %14s %14s %9s %25s %s\n", "metric", "stat", "vLLM (ms)", "servesim (ms)", "diff %", "90% interval (ms)", "inside")
		for _, row := range r.Stats {
			in := "no"
			if row.Inside != nil && *row.Inside {
				in = "yes"
			}
			fmt.Fprintf(&b, "%-6s %-5s %14.2f %14.2f %+9.2f %12.2f .. %-9.2f %s\n", row.Metric, row.Stat, row.Measured, row.Simulated, row.DiffPct, deref(row.Lo), deref(row.Hi), in)
		}
		fmt.Fprintf(&b, "intervals from the %s; measured values inside: %.0f %%\n", r.Band, 100*r.Coverage)
	}
	fmt.Fprintf(&b, "max |diff| %.2f %% (over the %d statistics above)\n", r.MaxAbsDiffPct, len(r.Stats))
	if len(r.QueueDelay) > 0 {
		fmt.Fprintf(&b, "queue delay (scheduled - queued), not in max |diff|; diff %% n/a below %.0f ms measured:\n", QueueNearZeroMs)
		fmt.Fprintf(&b, "%-6s %-5s %14s %14s %9s %10s\n", "metric", "stat", "vLLM (ms)", "servesim (ms)", "diff %", "diff (ms)")
		for _, row := range r.QueueDelay {
			pct := "n/a"
			if row.DiffPct != nil {
				pct = fmt.Sprintf("%+.2f", *row.DiffPct)
			}
			fmt.Fprintf(&b, "%-6s %-5s %14.2f %14.2f %9s %+10.2f\n", "queue", row.Stat, row.Measured, row.Simulated, pct, row.DiffMs)
		}
	}
	r.writeSteps(&b)
	if r.Placement != nil {
		r.Placement.write(&b)
	}
	if r.ClientOffsetMs != 0 {
		fmt.Fprintf(&b, "client-side: %.2f ms added to every simulated TTFT and E2E (client-to-engine offset)\n", r.ClientOffsetMs)
	}
	if r.Failed > 0 {
		fmt.Fprintf(&b, "%d measured requests failed on the client and are left out\n", r.Failed)
	}
	if r.KVBlocksRecorded > 0 {
		d := float64(r.KVBlocksPredicted-r.KVBlocksRecorded) / float64(r.KVBlocksRecorded) * 100
		fmt.Fprintf(&b, "KV blocks: %d recorded by vLLM (simulated), %d predicted by servesim (%+.2f %%)\n", r.KVBlocksRecorded, r.KVBlocksPredicted, d)
	} else {
		fmt.Fprintf(&b, "KV blocks: %d predicted by servesim (the run records no num_gpu_blocks)\n", r.KVBlocksPredicted)
	}
	return b.String()
}
