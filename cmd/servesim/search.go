package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/search"
	"github.com/servesim/servesim/internal/validate"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// searchFlags are the flags shared by the search subcommands.
type searchFlags struct {
	scenario  scenarioFlags
	ttftMs    float64
	tpotMs    float64
	e2eMs     float64
	target    float64
	margin    float64
	tolerance float64
	resample  int
	asJSON    bool
	quiet     bool
	fs        *pflag.FlagSet
	sloFrom   string // where the per-request bounds came from, for the report
}

func (f *searchFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	f.scenario.register(fs)
	fs.Float64Var(&f.ttftMs, "ttft-ms", 2000, "TTFT bound per request, ms (default: the scenario's slo.ttft_ms if its slo section sets a bound, else 2000)")
	fs.Float64Var(&f.tpotMs, "tpot-ms", 100, "TPOT bound per request, ms (default: the scenario's slo.tpot_ms if its slo section sets a bound, else 100)")
	fs.Float64Var(&f.e2eMs, "e2e-ms", 0, "E2E bound per request, ms; 0: none (default: the scenario's slo.e2e_ms)")
	fs.Float64Var(&f.target, "target", search.DefaultTarget, "SLO attainment to reach, in (0, 1]")
	fs.Float64Var(&f.margin, "margin", search.DefaultMargin, "relative extra load that must miss the target (0.05: 5 % more)")
	fs.Float64Var(&f.tolerance, "tolerance", search.DefaultTolerance, "relative width of the final bisection bracket (< margin)")
	fs.IntVar(&f.resample, "resample", 0, "replace the trace by N requests with its prompt/output lengths and mean rate, Poisson arrivals (for traces too short to load the cluster)")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr")
}

// load returns the scenario and the search options.
func (f *searchFlags) load() (*config.Scenario, config.Source, search.Options, error) {
	s, src, err := f.scenario.load()
	if err != nil {
		return nil, src, search.Options{}, err
	}
	// The scenario's targets, per request and percentile; the default
	// per-request bounds only when it sets neither.
	slo := search.SLO{TTFTMs: s.SLO.TTFTMs, TPOTMs: s.SLO.TPOTMs, E2EMs: s.SLO.E2EMs}
	f.sloFrom = "the scenario's slo section"
	if slo == (search.SLO{}) && len(s.SLO.Percentiles) == 0 {
		slo = search.SLO{TTFTMs: 2000, TPOTMs: 100}
		f.sloFrom = "default bounds (the scenario sets no slo)"
	}
	if f.fs.Changed("ttft-ms") || f.fs.Changed("tpot-ms") || f.fs.Changed("e2e-ms") {
		f.sloFrom = "the flags"
	}
	if f.fs.Changed("ttft-ms") {
		slo.TTFTMs = f.ttftMs
	}
	if f.fs.Changed("tpot-ms") {
		slo.TPOTMs = f.tpotMs
	}
	if f.fs.Changed("e2e-ms") {
		slo.E2EMs = f.e2eMs
	}
	if f.fs.Changed("resample") {
		if s, err = search.Resample(s, src, f.resample); err != nil {
			return nil, src, search.Options{}, badInput(fmt.Errorf("--resample: %w", err))
		}
	}
	o := search.Options{SLO: slo, Target: f.target, Margin: f.margin, Tolerance: f.tolerance, Percentiles: len(s.SLO.Percentiles) > 0}
	switch {
	case f.target <= 0 || f.target > 1:
		return nil, src, o, badInput(fmt.Errorf("--target: must be in (0, 1] (got %g; 0.9 means 90 %% of requests meet the SLO)", f.target))
	case f.margin <= 0:
		return nil, src, o, badInput(fmt.Errorf("--margin: must be > 0 (got %g)", f.margin))
	case f.tolerance <= 0 || f.tolerance >= f.margin:
		return nil, src, o, badInput(fmt.Errorf("--tolerance: must be in (0, --margin %g) (got %g)", f.margin, f.tolerance))
	case slo.TTFTMs < 0:
		return nil, src, o, badInput(fmt.Errorf("--ttft-ms: must be >= 0 (got %g; 0 drops the bound)", slo.TTFTMs))
	case slo.TPOTMs < 0:
		return nil, src, o, badInput(fmt.Errorf("--tpot-ms: must be >= 0 (got %g; 0 drops the bound)", slo.TPOTMs))
	case slo.E2EMs < 0:
		return nil, src, o, badInput(fmt.Errorf("--e2e-ms: must be >= 0 (got %g; 0 drops the bound)", slo.E2EMs))
	case slo == search.SLO{} && !o.Percentiles:
		return nil, src, o, badInput(fmt.Errorf("no SLO: set --ttft-ms, --tpot-ms or --e2e-ms"))
	}
	return s, src, o, nil
}

func newSearchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Capacity searches: the max rate under an SLO, the best prefill/decode split",
		Long: `Capacity searches that run a scenario many times (each run deterministic):

  servesim search max-rate -c SCENARIO [--ttft-ms 2000 --tpot-ms 100 --target 0.9]
  servesim search pd-ratio -c SCENARIO --gpus 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return badInput(fmt.Errorf("search: name a search: max-rate or pd-ratio (servesim search --help)"))
		},
	}
	cmd.AddCommand(newMaxRateCmd(), newPDRatioCmd())
	return cmd
}

// searchError types a search's error: an interrupt or a failed simulation
// keeps its own type (exit 130 or 1); anything else is the input's fault.
func searchError(err error) error {
	var run *search.RunError
	if errors.Is(err, context.Canceled) || errors.As(err, &run) {
		return err
	}
	return badInput(err)
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// interruptible makes SIGINT and SIGTERM cancel cmd.Context() from now on
// and returns the function that stops that. The commands that catch
// signals call it first thing, before loading anything, so that a signal
// during the load ends them with exit code 130 (not 143, killed by the
// signal) once the load is done; their runs poll the context.
func interruptible(cmd *cobra.Command) context.CancelFunc {
	ctx, stop := signalContext()
	cmd.SetContext(ctx)
	return stop
}

func newMaxRateCmd() *cobra.Command {
	var (
		f            searchFlags
		errorBars    bool
		seedReplicas int
	)
	cmd := &cobra.Command{
		Use:   "max-rate -c SCENARIO [--ttft-ms 2000 --tpot-ms 100 --target 0.9]",
		Short: "Find the largest arrival rate at which SLO attainment reaches the target",
		Long: `Find the largest arrival rate at which SLO attainment (the share of all
requests that finish within every per-request bound) is at least --target,
by bisection on a multiplier of the scenario's arrival rate. A synthetic
workload's arrival.rate is multiplied; a trace's arrival times are divided
(workload.time_scale = time_scale / multiplier), keeping its requests and
their order. The search brackets the threshold by doubling or halving from
the scenario's own rate, bisects to --tolerance, then runs --margin (5 %)
more load and requires it to miss the target. Both runs are printed.

The SLO bounds are the flags, else the scenario's slo section, else TTFT
2000 ms and TPOT 100 ms.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop := interruptible(cmd)
			defer stop()
			s, src, o, err := f.load()
			if err != nil {
				return err
			}
			f.scenario.printNotes(cmd.ErrOrStderr())
			if err := warnLatency(cmd.ErrOrStderr(), nil, s, src); err != nil {
				return err
			}
			if !f.quiet && !f.asJSON {
				stderr := cmd.ErrOrStderr()
				o.OnProbe = func(p search.Probe) {
					fmt.Fprintf(stderr, "  rate %9.4g req/s (x%.4g): attainment %5.1f %%\n", p.RateRPS, p.Multiplier, 100*p.Attainment)
				}
			}
			ctx := cmd.Context() // interruptible (its RunE's first lines)
			// Error bars: the step-model band when the deployment has one,
			// seed variance when the workload is generated; at least one.
			var band *calibrate.Band
			seeds := false
			if errorBars {
				if seedReplicas < 2 {
					return badInput(fmt.Errorf("--seed-replicas must be at least 2 (got %d)", seedReplicas))
				}
				var bandErr error
				band, bandErr = validate.StepBand(s)
				seeds = s.Workload.Generated()
				if bandErr != nil && !seeds {
					return badInput(fmt.Errorf("--error-bars: nothing to take an interval from: %w; seed variance needs a generated workload", bandErr))
				}
			}
			res, err := search.MaxRate(ctx, s, src, o)
			if err != nil {
				return searchError(fmt.Errorf("max-rate: %s: %w", scenarioName(f.scenario.file), err))
			}
			if band != nil {
				fast, slow := band.StepScales()
				if err := res.AddInterval(ctx, s, src, o, band.String(), band.Coverage, fast, slow); err != nil {
					return searchError(fmt.Errorf("max-rate: %s: %w", scenarioName(f.scenario.file), err))
				}
			}
			if seeds {
				if err := res.AddSeedVariance(ctx, s, src, o, 0.9, seedReplicas); err != nil {
					return searchError(fmt.Errorf("max-rate: %s: %w", scenarioName(f.scenario.file), err))
				}
			}
			if f.asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), maxRateReport(res, s, f.sloFrom))
			return err
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&errorBars, "error-bars", false, "add the answer's 90 % interval: the search run again with every step time at each end of the roofline's step-error band (with --predictor roofline and the deployment's measured tables; two more searches) and, for a generated workload, with --seed-replicas other seeds")
	cmd.Flags().IntVar(&seedReplicas, "seed-replicas", validate.DefaultReplicas, "extra seeds searched for the seed variance of --error-bars (generated workloads)")
	return cmd
}

// targetValues renders a run's percentile targets with its values and
// verdicts, " (p99 TPOT 49.74 ms, target <= 50 ms met)", so that the
// figures that decide a search are shown ("" when the run has none).
func targetValues(r *metrics.Result) string {
	if r.SLO == nil || len(r.SLO.Targets) == 0 {
		return ""
	}
	parts := make([]string, len(r.SLO.Targets))
	for i, t := range r.SLO.Targets {
		verdict := "met"
		if !t.Met {
			verdict = "MISSED"
		}
		parts[i] = fmt.Sprintf("p%d %s %s ms, target <= %g ms %s", t.Percentile, strings.ToUpper(string(t.Metric)), t.ValueString(2), t.MaxMs, verdict)
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// maxRateReport renders a max-rate result.
func maxRateReport(r *search.MaxRateResult, s *config.Scenario, sloFrom string) string {
	var b strings.Builder
	if r.SLO != (search.SLO{}) {
		fmt.Fprintf(&b, "Max rate of %s: SLO %s, attainment >= %g %%", r.Scenario, r.SLO, 100*r.Target)
	} else {
		fmt.Fprintf(&b, "Max rate of %s: no per-request bounds", r.Scenario)
	}
	for _, t := range s.SLO.Percentiles {
		fmt.Fprintf(&b, "; p%d %s <= %g ms", t.Percentile, strings.ToUpper(string(t.Metric)), t.MaxMs)
	}
	fmt.Fprintf(&b, " (from %s)\n", sloFrom)
	wl, unit := searchedWorkload(s)
	fmt.Fprintf(&b, "Workload %s at %.4g %s, scaled through %s (%d runs)\n\n", wl, r.BaseRateRPS, unit, r.Scaling, len(r.Probes))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\trate (%s)\tmultiplier\tattainment\tgoodput (req/s)\tTTFT p90 (ms)\tTPOT p90 (ms)\tfinished\t\n", unit)
	perRequest := r.SLO != (search.SLO{})
	row := func(label string, p search.Probe) {
		att, good := "n/a", "n/a"
		if perRequest {
			att, good = fmt.Sprintf("%.1f %%", 100*p.Attainment), fmt.Sprintf("%.3f", p.GoodputRPS)
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%s\t%s\t%.1f\t%.2f\t%d/%d\t\n", label, p.RateRPS, p.Multiplier, att,
			good, p.Summary.TTFT.P90, p.Summary.TPOT.P90, p.Summary.Finished, p.Summary.RequestsTotal)
	}
	row("max rate", r.Best)
	row(fmt.Sprintf("+%g %%", 100*r.Margin), r.Above)
	tw.Flush()
	if perRequest {
		fmt.Fprintf(&b, "\n%.4g %s meets the target (attainment %.1f %%); %g %% more, %.4g %s, misses it (attainment %.1f %%).\n",
			r.Best.RateRPS, unit, 100*r.Best.Attainment, 100*r.Margin, r.Above.RateRPS, unit, 100*r.Above.Attainment)
	} else {
		fmt.Fprintf(&b, "\n%.4g %s meets the percentile targets%s; %g %% more, %.4g %s, misses them%s.\n",
			r.Best.RateRPS, unit, targetValues(&r.Best.Summary), 100*r.Margin, r.Above.RateRPS, unit, targetValues(&r.Above.Summary))
	}
	if iv := r.Interval; iv != nil {
		fmt.Fprintf(&b, "max rate %.4g req/s (%.0f %% interval %.4g–%.4g)\n", r.Best.RateRPS, 100*iv.Coverage, iv.LoRPS, iv.HiRPS)
		if iv.Band != "" {
			fmt.Fprintf(&b, "  (searched again with steps x%.3f and x%.3f: %.4g and %.4g req/s; %s)\n", iv.FastScale, iv.SlowScale, iv.FastRPS, iv.SlowRPS, iv.Band)
		}
		if iv.Replicas > 0 {
			fmt.Fprintf(&b, "  (searched again with %d more seeds: %.4g–%.4g req/s; %.0f %% seed interval %.4g–%.4g)\n",
				iv.Replicas, slices.Min(iv.SeedRPS), slices.Max(iv.SeedRPS), 100*iv.Coverage, iv.SeedLoRPS, iv.SeedHiRPS)
		}
	}
	if r.Best.TimeScale > 0 {
		fmt.Fprintf(&b, "(workload.time_scale %.6g and %.6g)\n", r.Best.TimeScale, r.Above.TimeScale)
	}
	if r.Warning != "" {
		fmt.Fprintf(&b, "warning: %s\n", r.Warning)
	}
	return b.String()
}

// searchedWorkload names the workload a rate search scales and the unit
// of its rate: a generated chat workload's arrivals are conversation
// starts, each several requests.
func searchedWorkload(s *config.Scenario) (name, unit string) {
	w := &s.Workload
	switch {
	case w.Synthetic != nil:
		return "synthetic", "req/s"
	case w.Chat != nil:
		return "chat", "conversations/s"
	case w.SharedPrefix != nil:
		return "shared prefix", "req/s"
	}
	return w.Trace, "req/s"
}

func newPDRatioCmd() *cobra.Command {
	var (
		f            searchFlags
		gpus         int
		workers      int
		errorBars    bool
		seedReplicas int
	)
	cmd := &cobra.Command{
		Use:   "pd-ratio -c SCENARIO --gpus N",
		Short: "Find the prefill/decode split of N GPUs with the highest SLO-meeting rate per GPU",
		Long: `For a fixed number of GPUs (instances x tp), run max-rate for every split
into prefill and decode instances (each at the tp of the scenario's prefill
or decode group) and print, per split, the max rate meeting the SLO
attainment target, its attainment, the attainment at --margin more load,
the max rate per GPU, and the goodput at the max rate as vLLM's bench serve
defines it (requests meeting the SLO / run duration). Splits are ranked by
the max rate per GPU, DistServe's per-GPU goodput.

The prefill and decode instances are copies of the scenario's prefill and
decode groups (hardware, tp, memory, engine overrides), or of its one mixed
group. Splits are searched in parallel (--workers, default all cores).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop := interruptible(cmd)
			defer stop()
			if gpus < 2 {
				return badInput(fmt.Errorf("--gpus: must be >= 2 (got %d)", gpus))
			}
			if workers < 0 {
				return badInput(fmt.Errorf("--workers: must be >= 0 (got %d; 0 uses all cores)", workers))
			}
			s, src, o, err := f.load()
			if err != nil {
				return err
			}
			f.scenario.printNotes(cmd.ErrOrStderr())
			if err := warnLatency(cmd.ErrOrStderr(), nil, s, src); err != nil {
				return err
			}
			pre, dec, err := search.Templates(s)
			if err != nil {
				return badInput(fmt.Errorf("pd-ratio: %s: %w", scenarioName(f.scenario.file), err))
			}
			bar := newSweepBar(cmd.ErrOrStderr(), f.quiet, len(search.Splits(gpus, *pre.TP, *dec.TP)))
			ctx := cmd.Context() // interruptible (its RunE's first lines)
			var band *calibrate.Band
			seeds := 0
			if errorBars {
				if seedReplicas < 2 {
					return badInput(fmt.Errorf("--seed-replicas must be at least 2 (got %d)", seedReplicas))
				}
				var bandErr error
				band, bandErr = validate.StepBand(s)
				if s.Workload.Generated() {
					seeds = seedReplicas
				}
				if bandErr != nil && seeds == 0 {
					return badInput(fmt.Errorf("--error-bars: nothing to take an interval from: %w; seed variance needs a generated workload", bandErr))
				}
			}
			res, err := search.PDRatio(ctx, s, src, gpus, o, workers, bar.set)
			bar.finish()
			if err != nil {
				return searchError(fmt.Errorf("pd-ratio: %s: %w", scenarioName(f.scenario.file), err))
			}
			if errorBars {
				desc, fast, slow := "", 1.0, 1.0
				if band != nil {
					desc = band.String()
					fast, slow = band.StepScales()
				}
				if err := res.AddIntervals(ctx, s, src, o, workers, desc, 0.9, fast, slow, seeds); err != nil {
					return searchError(fmt.Errorf("pd-ratio: %s: %w", scenarioName(f.scenario.file), err))
				}
			}
			if f.asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), pdRatioTable(res))
			return err
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().IntVar(&gpus, "gpus", 8, "GPUs to split between prefill and decode instances")
	cmd.Flags().IntVar(&workers, "workers", 0, "splits searched at once (default: all cores)")
	cmd.Flags().BoolVar(&errorBars, "error-bars", false, "add each split's 90 % max-rate interval, as search max-rate --error-bars does (two more searches per split with the step band, --seed-replicas more for a generated workload)")
	cmd.Flags().IntVar(&seedReplicas, "seed-replicas", validate.DefaultReplicas, "extra seeds searched per split for the seed variance of --error-bars (generated workloads)")
	return cmd
}

// intervalSources names the sources of a max-rate interval.
func intervalSources(iv *search.RateInterval) string {
	var src []string
	if iv.Band != "" {
		src = append(src, iv.Band)
	}
	if iv.Replicas > 0 {
		src = append(src, fmt.Sprintf("seed variance over %d more seeds", iv.Replicas))
	}
	return strings.Join(src, "; ")
}

// pdRatioTable renders a pd-ratio result.
func pdRatioTable(r *search.PDRatioResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Prefill/decode splits of %d GPUs for %s: SLO %s, attainment >= %g %%\n\n", r.GPUs, r.Scenario, r.SLO, 100*r.Target)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	more := fmt.Sprintf("+%g %%", 100*r.Margin)
	fmt.Fprintf(tw, "prefill\tdecode\tmax rate (req/s)\tattainment\t%s rate\t%s attainment\tmax rate/GPU\tgoodput (req/s)\t\t\n", more, more)
	var notes []string
	for i, sp := range r.Splits {
		p := fmt.Sprintf("%d", sp.Prefill)
		d := fmt.Sprintf("%d", sp.Decode)
		if sp.PrefillTP > 1 || sp.DecodeTP > 1 {
			p, d = fmt.Sprintf("%dxtp%d", sp.Prefill, sp.PrefillTP), fmt.Sprintf("%dxtp%d", sp.Decode, sp.DecodeTP)
		}
		if sp.MaxRate == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t\t\n", p, d)
			notes = append(notes, fmt.Sprintf("%s prefill + %s decode: %s", p, d, sp.Err))
			continue
		}
		best := ""
		if i == r.Best {
			best = "<- best"
		}
		m := sp.MaxRate
		if m.Warning != "" {
			best += " (!)"
			notes = append(notes, fmt.Sprintf("(!) %s prefill + %s decode: %s", p, d, m.Warning))
		}
		rate := fmt.Sprintf("%.3f", m.Best.RateRPS)
		if iv := m.Interval; iv != nil {
			rate = fmt.Sprintf("%.3f (%.3f–%.3f)", m.Best.RateRPS, iv.LoRPS, iv.HiRPS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f %%\t%.3f\t%.1f %%\t%.4f\t%.3f\t%s\t\n", p, d, rate, 100*m.Best.Attainment,
			m.Above.RateRPS, 100*m.Above.Attainment, sp.RatePerGPU, sp.GoodputRPS, best)
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(&b, "\n%s", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	if r.Best >= 0 {
		sp := r.Splits[r.Best]
		fmt.Fprintf(&b, "\nBest split: %d prefill + %d decode instances: %.3f req/s meet the SLO, %.4f req/s per GPU (DistServe's per-GPU goodput).\n",
			sp.Prefill, sp.Decode, sp.MaxRate.Best.RateRPS, sp.RatePerGPU)
		if iv := sp.MaxRate.Interval; iv != nil {
			fmt.Fprintf(&b, "max rates with their %.0f %% intervals (%s)", 100*iv.Coverage, intervalSources(iv))
			var within []string
			for i, o := range r.Splits {
				if i != r.Best && o.MaxRate != nil && o.MaxRate.Interval != nil && o.MaxRate.Interval.HiRPS >= iv.LoRPS {
					within = append(within, fmt.Sprintf("%d+%d", o.Prefill, o.Decode))
				}
			}
			if len(within) > 0 {
				fmt.Fprintf(&b, "; the interval of %s reaches the best split's: the ranking is within the error bars\n", strings.Join(within, ", "))
			} else {
				b.WriteString("; no other split's interval reaches the best split's\n")
			}
		}
	} else {
		b.WriteString("\nNo split meets the SLO at any rate searched.\n")
	}
	return b.String()
}
