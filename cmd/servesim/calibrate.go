package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/validate"
	"github.com/spf13/cobra"
)

func newCalibrateCmd() *cobra.Command {
	var (
		bundles                              []string
		out, check, cal                      string
		use                                  string
		tp                                   int
		noLeaveOneOut, ops, smWave, fp8Waves bool
		fp8Only, quantOnly, allReduceOnly    bool
		quantFormats                         []string
		transfer                             bool
		crossModel                           bool
		measuredRuns                         []string
		benchConfig                          string
		benchOffsetMs                        float64
		dbDir, dbSystem                      string
		dbVersion                            string
	)
	cmd := &cobra.Command{
		Use:   "calibrate --profiles BUNDLE [--profiles BUNDLE ...] [-o FILE] | --perfdb DIR --system NAME [-o FILE] | --check BUNDLE | --check perfdb:NAME | --transfer | --cross-model | --measured RUN [--measured RUN ...]",
		Short: "Fit the roofline predictor's efficiencies for one accelerator from measured profile tables, or check a calibration on them",
		Long: `Fit the roofline step-latency predictor's efficiency and overhead parameters
for one accelerator by least squares over every dense, attention,
per-sequence and MoE table point of one or more measured profile bundles,
and write them as a calibration YAML that scenarios load with
predictor.calibration. A calibration is per accelerator, not per model: fit
it on one model and use it for any model on that accelerator. Given two
bundles or more, calibrate also reports the leave-one-out error: each bundle
checked against a fit on the others.

BUNDLE is a bundle folder holding meta.yaml and tp<N>/ tables (for example
profiles/RTXPRO6000/Qwen/Qwen3-32B/bf16), or builtin:<hw>/<org>/<model>/<dtype>
for an embedded one; a trailing /tp<N>, as servesim catalog lists bundles,
selects the tensor-parallel degree. A v0 per-layer profile folder
(<hw>/<org>/<model>/tp<N>/layers.csv, PyTorch eager timings) is read too;
its calibration is labelled PyTorch-derived. When FILE exists its other
accelerators are kept.

--perfdb DIR --system NAME fits the calibration of the accelerator whose
catalog perfdb_system is NAME on a per-op performance database in NVIDIA
AIConfigurator's layout (DIR is its systems folder; builtin for the copy
servesim embeds): the GEMM efficiencies on the bf16 GEMM rows, the
attention constants on the context and generation attention rows (bf16 KV
cache), every row within one serving step's token budget. Fields the
database cannot inform (elementwise op scales, caches, sampler, attention
skew) are kept from the embedded RTXPRO6000 calibration; the entry says so.
--perfdb-version picks the vLLM version folder (default 0.19.0, else the
nearest measured one). --sm-wave fits the attention wave as the GPU's SM
count times a whole CTA occupancy rather than a free width; --fp8-waves
times the fp8, block-scaled fp8 and (on RTX Blackwell) NVFP4 GEMMs of a
Hopper or RTX Blackwell GPU in waves of output tiles over its SMs.
--quant-only fits only the quantised GEMM terms (fp8, block-scaled fp8,
NVFP4: those the system has rows of) of the accelerator's existing
calibration (its entry in FILE, else the embedded one), every other field
held: for a calibration fitted on step profiles without quantised rows.
--quant-formats LIST restricts it to some of fp8, fp8_block and nvfp4.
--fp8-only is the older name of --quant-only. --allreduce-only fits only
the all-reduce constants of the accelerator's existing calibration on the
database's all-reduce rows, per algorithm of vLLM's dispatch, every other
field held.

--check BUNDLE prints the median and p90 relative error per table of a
calibration (--calibration FILE, default the embedded one) on BUNDLE's
tables; --use NAME checks the calibration of accelerator NAME instead of
the bundle's own (with the bundle's accelerator specs). --check
perfdb:NAME checks it on database system NAME's tables (--perfdb DIR,
default builtin) instead: GEMM, context and generation attention, and the
fp8 GEMMs the bf16 fit is carried to.

--transfer checks the transfer band, the step band an accelerator without
tables of its own gets from the calibration it borrows (or --use NAME's):
the calibration's step residuals on the embedded bundles and any
--profiles BUNDLE of other accelerators, grouped by accelerator, with each
accelerator held out in turn from a band taken on the others.

--cross-model checks the cross-model band, the step band a deployment on a
calibrated accelerator without tables for its model or tp gets: the
calibration of --use NAME (default: the one an uncalibrated accelerator
borrows) on that accelerator's embedded bundles and any --profiles BUNDLE of
it, grouped by model, with each model held out in turn from a band taken
on the others.

--measured RUN fits the engine-side terms (extra host time per step and,
for tp > 1, the collective scale) to measured runs; a vllm bench serve
result file holds no engine settings: they come from -c SCENARIO (the
server it was measured on; default the embedded default scenario, with the
file's model) and its client offset from --client-offset-ms.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(measuredRuns) > 0 {
				if check != "" || len(bundles) > 0 {
					return usageError{fmt.Errorf("--measured fits engine-side terms only; give it without --profiles and --check")}
				}
				return runMeasuredFit(cmd, measuredRuns, benchConfig, benchOffsetMs)
			}
			if crossModel {
				if check != "" || transfer {
					return usageError{fmt.Errorf("give --cross-model alone, not with --check or --transfer")}
				}
				return runCrossModel(cmd.OutOrStdout(), bundles, cal, use, tp, cmd.Flags().Changed("tp"))
			}
			if transfer {
				if check != "" {
					return usageError{fmt.Errorf("give --transfer or --check BUNDLE, not both")}
				}
				return runTransfer(cmd.OutOrStdout(), bundles, cal, use, tp, cmd.Flags().Changed("tp"))
			}
			if sys, ok := strings.CutPrefix(check, "perfdb:"); ok {
				if len(bundles) > 0 || dbSystem != "" {
					return usageError{fmt.Errorf("--check perfdb:NAME names the system; give it without --profiles and --system")}
				}
				return runPerfDBCheck(cmd.OutOrStdout(), dbDir, sys, dbVersion, cal, use, ops)
			}
			if dbDir != "" || dbSystem != "" {
				if check != "" || len(bundles) > 0 {
					return usageError{fmt.Errorf("--perfdb DIR --system NAME fits on the database alone; give it without --profiles and --check BUNDLE")}
				}
				if dbDir == "" || dbSystem == "" {
					return usageError{fmt.Errorf("give both --perfdb DIR (or builtin) and --system NAME")}
				}
				return runPerfDBFit(cmd, dbDir, dbSystem, dbVersion, out, perfDBFitFlags{smWave: smWave, fp8Waves: fp8Waves, fp8Only: fp8Only || quantOnly, allReduceOnly: allReduceOnly, quantFormats: quantFormats})
			}
			if check != "" {
				if len(bundles) > 0 {
					return usageError{fmt.Errorf("give --check BUNDLE or --profiles BUNDLE, not both")}
				}
				return runCheck(cmd.OutOrStdout(), check, cal, use, tp, cmd.Flags().Changed("tp"), ops)
			}
			if len(bundles) == 0 {
				return usageError{fmt.Errorf("--profiles BUNDLE (or --check BUNDLE) is required")}
			}
			var tables []*calibrate.Tables
			for _, b := range bundles {
				t, err := loadTables("--profiles", b, tp, cmd.Flags().Changed("tp"))
				if err != nil {
					return err
				}
				tables = append(tables, t)
			}
			start := time.Now()
			opts := calibrate.Options{Progress: func(stage string) {
				fmt.Fprintf(cmd.ErrOrStderr(), "calibrate: %s (%.0f s so far)\n", stage, time.Since(start).Seconds())
			}}
			entry, rep, err := calibrate.FitTables(tables, opts)
			if err != nil {
				return badInput(err)
			}
			accName := tables[0].Accelerator
			file := &calibrate.File{Version: 1, Accelerators: map[string]*calibrate.Entry{}}
			if out != "" {
				old, err := os.ReadFile(out)
				switch {
				case err == nil:
					if file, err = calibrate.Load(bytes.NewReader(old), out); err != nil {
						return badInput(err)
					}
				case !errors.Is(err, fs.ErrNotExist):
					return badInput(fmt.Errorf("-o %s: %w", out, err))
				}
			}
			file.Accelerators[accName] = entry
			var buf bytes.Buffer
			if err := calibrate.Write(&buf, file); err != nil {
				return err
			}
			ew := cmd.ErrOrStderr()
			fmt.Fprintf(ew, "calibrated %s on %s", accName, entry.Source)
			if l := entry.Label(); l != "" {
				fmt.Fprintf(ew, " (%s)", l)
			}
			fmt.Fprintf(ew, "; in-sample error:\n%s", rep.String())
			if len(tables) > 1 && !noLeaveOneOut {
				reps, err := calibrate.LeaveOneOut(tables, opts)
				if err != nil {
					return badInput(err)
				}
				fmt.Fprintln(ew, "leave-one-out error (each bundle checked against a fit on the others):")
				for i, r := range reps {
					fmt.Fprintf(ew, "%s\n%s", tables[i].Source, r.Report.TableString())
					fmt.Fprintf(ew, "  90%% band of the fit: %s; held-out steps inside: %.1f%% of %d\n", r.Band, 100*r.Covered, r.Steps)
				}
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			return os.WriteFile(out, buf.Bytes(), 0o644)
		},
	}
	cmd.Flags().StringArrayVar(&bundles, "profiles", nil, "profile bundle folder (holding meta.yaml), builtin:<hw>/<org>/<model>/<dtype>, or v0 profile folder; repeat for several bundles of one accelerator")
	cmd.Flags().IntVar(&tp, "tp", 1, "tensor-parallel degree of the tables to fit or check")
	cmd.Flags().StringVarP(&out, "output", "o", "", "calibration YAML to write or update (default: stdout)")
	cmd.Flags().StringVar(&check, "check", "", "check a calibration on this bundle's tables instead of fitting")
	cmd.Flags().StringVar(&cal, "calibration", "", "with --check, --transfer or --cross-model: calibration YAML to check (default: the embedded calibration)")
	cmd.Flags().StringVar(&use, "use", "", "with --check: check accelerator NAME's calibration (default: the bundle's accelerator); with --transfer: lend NAME's (default: the one an uncalibrated accelerator borrows); with --cross-model: check NAME's on NAME's tables (same default)")
	cmd.Flags().StringArrayVar(&measuredRuns, "measured", nil, "fit the engine-side host time per step to a measured run (a run directory, builtin:NAME, or a vllm bench serve result file run against the default scenario); repeat for leave-one-out")
	cmd.Flags().StringVarP(&benchConfig, "config", "c", "", "with --measured: scenario YAML describing the server the bench result files were measured on (default: the embedded default scenario with the file's model)")
	cmd.Flags().Float64Var(&benchOffsetMs, "client-offset-ms", 0, "with --measured: client-side time inside each bench result's TTFT and E2E (see docs/validation.md)")
	cmd.Flags().BoolVar(&transfer, "transfer", false, "check the transfer band of a lent calibration: leave one accelerator out of the embedded and --profiles tables of other accelerators")
	cmd.Flags().BoolVar(&crossModel, "cross-model", false, "check the cross-model band of a calibration: leave one model out of the embedded and --profiles tables of its accelerator (--use NAME)")
	cmd.Flags().StringVar(&dbDir, "perfdb", "", "per-op performance database: an AIConfigurator systems folder, or builtin for the embedded copy")
	cmd.Flags().StringVar(&dbSystem, "system", "", "with --perfdb: the database system to fit (e.g. h100_sxm; see perfdb_system in servesim catalog)")
	cmd.Flags().StringVar(&dbVersion, "perfdb-version", "", "with --perfdb or --check perfdb:NAME: vLLM version folder of the tables (default 0.19.0, else the nearest measured)")
	cmd.Flags().BoolVar(&smWave, "sm-wave", false, "with --perfdb: fit the attention wave as the GPU's SM count (catalog sms) times a CTA occupancy of 1-4 instead of a free width (see docs/calibration.md)")
	cmd.Flags().BoolVar(&fp8Waves, "fp8-waves", false, "with --perfdb: fit the fp8 GEMM terms with the compute time in waves of output tiles over the SMs (vLLM's SM90 and SM120 scaled-mm; see docs/calibration.md)")
	cmd.Flags().BoolVar(&quantOnly, "quant-only", false, "with --perfdb: fit only the quantised GEMM terms (fp8, block fp8, NVFP4) of the accelerator's existing calibration (in -o FILE, else embedded), every other field held")
	cmd.Flags().BoolVar(&fp8Only, "fp8-only", false, "the older name of --quant-only")
	cmd.Flags().StringSliceVar(&quantFormats, "quant-formats", nil, "with --quant-only: fit only these formats' terms (fp8, fp8_block, nvfp4; default all the system has rows of)")
	cmd.Flags().BoolVar(&allReduceOnly, "allreduce-only", false, "with --perfdb: fit only the all-reduce constants of the accelerator's existing calibration (in -o FILE, else embedded) on the database's all-reduce rows, every other field held")
	cmd.Flags().BoolVar(&ops, "ops", false, "with --check: also print the error of every table and op")
	cmd.Flags().BoolVar(&noLeaveOneOut, "no-leave-one-out", false, "skip the leave-one-out fits (one extra fit per bundle)")
	return cmd
}

// loadTables opens one bundle reference, given by flag (--profiles or
// --check), and reads its tables at degree tp (or the degree a trailing
// /tp<N> names).
func loadTables(flag, ref string, tp int, tpSet bool) (*calibrate.Tables, error) {
	b, refTP := calibrate.SplitTP(ref)
	fsys, name, err := openBundle(flag, b)
	if err != nil {
		return nil, badInput(err)
	}
	if refTP > 0 {
		if tpSet && tp != refTP {
			return nil, usageError{fmt.Errorf("%s names tp%d but --tp is %d; give one of them", ref, refTP, tp)}
		}
		tp = refTP
	}
	if refTP > 0 && calibrate.IsV0Dir(fsys, fmt.Sprintf("tp%d", tp)) {
		// a v0 tp<N> folder given by its own path
		if fsys, name, err = openBundle(flag, ref); err != nil {
			return nil, badInput(err)
		}
		tp = 0
	}
	t, err := calibrate.LoadTables(fsys, strings.TrimPrefix(name, "builtin:"), tp)
	if err != nil {
		return nil, badInput(err)
	}
	return t, nil
}

// checkedEntry is the calibration entry a check of tables measured on
// accelerator acc uses: --use's entry when given, else acc's, else, as a
// run would, the file's fallback; how says when it is borrowed.
func checkedEntry(file *calibrate.File, name, acc, use string) (string, *calibrate.Entry, string, error) {
	if use != "" {
		acc = use
	}
	if en, ok := file.Entry(acc); ok {
		return acc, en, "", nil
	}
	if use != "" {
		return "", nil, "", badInput(fmt.Errorf("--use %s: %s has no such accelerator (it has %s)", use, name, strings.Join(file.Names(), ", ")))
	}
	lender, ok := file.Fallback()
	if a, err := hw.Lookup(acc); err == nil {
		// As a run: its calibration_from, else the nearest calibrated
		// architecture.
		if cat, err := hw.Default(); err == nil {
			if l, _, lok, lerr := file.Lender(a, cat); lerr == nil && lok {
				lender, ok = l, true
			}
		}
	}
	if !ok {
		return "", nil, "", badInput(fmt.Errorf("%s is not calibrated in %s and no calibration may be lent; give --use NAME", acc, name))
	}
	en, ok := file.Entry(lender)
	if !ok {
		return "", nil, "", fmt.Errorf("calibration file %s names %s as the fallback but has no entry for it", name, lender)
	}
	return lender, en, fmt.Sprintf(" (%s is not calibrated: borrowed, as a run would)", acc), nil
}

// runCheck prints a calibration's accuracy on one bundle's tables.
func runCheck(w io.Writer, ref, calFile, use string, tp int, tpSet, ops bool) error {
	t, err := loadTables("--check", ref, tp, tpSet)
	if err != nil {
		return err
	}
	file, name, err := openCalibration(calFile)
	if err != nil {
		return err
	}
	acc, en, how, err := checkedEntry(file, name, t.Accelerator, use)
	if err != nil {
		return err
	}
	rep, err := calibrate.Check(en.Efficiency(), t)
	if err != nil {
		return badInput(err)
	}
	printCalibrationHeader(w, acc, name, how, en)
	fmt.Fprintf(w, "\nchecked on %s (%s, %s format)\n%s", t.Source, t.Accelerator, t.Format, rep.TableString())
	if err := printBandCoverage(w, en.Efficiency(), acc, t); err != nil {
		return err
	}
	if ops {
		fmt.Fprint(w, rep.String())
	}
	return nil
}

// pickCalibration opens calibration file calFile (embedded when empty)
// and picks the entry of accelerator use or, use empty, the one an
// uncalibrated accelerator borrows; noLender says, after "NAME has", why a
// file may have none.
func pickCalibration(calFile, use, noLender string) (file *calibrate.File, name, acc string, en *calibrate.Entry, err error) {
	if file, name, err = openCalibration(calFile); err != nil {
		return nil, "", "", nil, err
	}
	acc = use
	if acc == "" {
		var ok bool
		if acc, ok = file.Fallback(); !ok {
			return nil, "", "", nil, badInput(fmt.Errorf("%s has %s; give --use NAME", name, noLender))
		}
	}
	en, ok := file.Entry(acc)
	if !ok {
		return nil, "", "", nil, badInput(fmt.Errorf("--use %s: %s has no such accelerator (it has %s)", use, name, strings.Join(file.Names(), ", ")))
	}
	return file, name, acc, en, nil
}

// printCalibrationHeader prints the first line of a report on the
// calibration en of accelerator acc in file name, without its newline;
// how says how it was picked.
func printCalibrationHeader(w io.Writer, acc, name, how string, en *calibrate.Entry) {
	fmt.Fprintf(w, "calibration %s of %s%s", acc, name, how)
	if l := en.Label(); l != "" {
		fmt.Fprintf(w, " [%s]", l)
	}
}

// printOwnBand prints, after label, the number of t's steps and the 90 %
// band of their residuals against efficiency eff.
func printOwnBand(w io.Writer, label string, eff perf.Efficiency, t *calibrate.Tables) error {
	res, err := calibrate.StepResiduals(eff, t)
	if err != nil {
		return badInput(err)
	}
	b, err := calibrate.NewBand(res, 0.9)
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(w, "  %s %6d steps, own band %+6.1f%% .. %+6.1f%%  %s (%s)\n", label, len(res), 100*b.Lo, 100*b.Hi, t.Source, t.Format)
	return nil
}

// canonicalAccelerator is the catalog's spelling of accelerator acc when
// file has an entry of that spelling, else acc.
func canonicalAccelerator(file *calibrate.File, acc string) string {
	for _, n := range file.Names() {
		if strings.EqualFold(n, acc) {
			return n
		}
	}
	return acc
}

// indexOf is the index of accelerator acc's group.
func indexOf(groups []calibrate.AcceleratorResiduals, acc string) int {
	for i, g := range groups {
		if g.Accelerator == acc {
			return i
		}
	}
	return -1
}

// openCalibration opens the calibration file calFile, or the embedded one
// when it is empty, and returns it with the name to print.
func openCalibration(calFile string) (*calibrate.File, string, error) {
	if calFile == "" {
		f, err := calibrate.Builtin()
		return f, "embedded calibration", err
	}
	f, err := os.Open(calFile)
	if err != nil {
		return nil, "", badInput(fmt.Errorf("--calibration: %w", err))
	}
	defer f.Close()
	file, err := calibrate.Load(f, calFile)
	if err != nil {
		return nil, "", badInput(err)
	}
	return file, calFile, nil
}

// openBundle opens a bundle folder on disk or among the embedded ones; flag
// names it in errors. The name of a folder on disk is its absolute slash
// path, so that a v0 folder's accelerator and model can be read from it.
func openBundle(flag, b string) (fs.FS, string, error) {
	if rest, ok := strings.CutPrefix(b, "builtin:"); ok {
		sub, err := fs.Sub(assets.FS(), path.Join("profiles", rest))
		if err != nil {
			return nil, "", err
		}
		if _, err := fs.Stat(sub, "meta.yaml"); err != nil {
			return nil, "", fmt.Errorf("%s: no embedded bundle %q (see servesim catalog)", flag, rest)
		}
		return sub, b, nil
	}
	st, err := os.Stat(b)
	if err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("%s: %q is not a directory", flag, b)
	}
	abs, err := filepath.Abs(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", flag, b, err)
	}
	return os.DirFS(b), filepath.ToSlash(abs), nil
}

// runMeasuredFit fits the extra per-step host time (and, for tp > 1 runs,
// the collective scale) to measured runs and prints them with the
// leave-one-out error.
func runMeasuredFit(cmd *cobra.Command, runs []string, benchConfig string, offsetMs float64) error {
	var ms []validate.MeasuredRun
	for _, r := range runs {
		if st, err := os.Stat(r); err == nil && !st.IsDir() {
			f, err := os.Open(r)
			if err != nil {
				return badInput(fmt.Errorf("--measured: %w", err))
			}
			b, err := validate.ReadBench(f, r)
			f.Close()
			if err != nil {
				return badInput(err)
			}
			abs, err := filepath.Abs(r)
			if err != nil {
				return badInput(fmt.Errorf("--measured: %w", err))
			}
			name := r
			// The server's engine settings: the companion scenario, else
			// the default scenario with the result's model.
			load := func() (*config.Scenario, config.Source, error) {
				if benchConfig != "" {
					return config.Load(benchConfig)
				}
				s, err := config.LoadDefault()
				if err == nil && b.Model != "" {
					s.Model = b.Model
				}
				return s, config.Source{}, err
			}
			s0, _, err := load()
			if err != nil {
				return badInput(err)
			}
			tp := 1
			if len(s0.Instances) > 0 && s0.Instances[0].TP != nil {
				tp = *s0.Instances[0].TP
			}
			ms = append(ms, validate.MeasuredRun{Name: name, TP: tp, Validate: func(t validate.Terms) (*validate.Report, error) {
				s, src, err := load()
				if err != nil {
					return nil, err
				}
				s.Predictor.StepOverheadUs, s.Predictor.CollectiveScale = t.OverheadUs, t.CollectiveScale
				return validate.RunBench(b, validate.BenchOptions{Scenario: s, Source: src, Name: name, File: abs, ClientOffsetMs: offsetMs})
			}})
			continue
		}
		fsys, name, err := openMeasured(r)
		if err != nil {
			return badInput(err)
		}
		sc, _, _, err := validate.Scenario(validate.Options{Measured: fsys, Name: name})
		if err != nil {
			return badInput(err)
		}
		ms = append(ms, validate.MeasuredRun{Name: name, TP: *sc.Instances[0].TP, Validate: func(t validate.Terms) (*validate.Report, error) {
			return validate.Run(validate.Options{Measured: fsys, Name: name, StepOverheadUs: &t.OverheadUs, CollectiveScale: &t.CollectiveScale})
		}})
	}
	res, err := validate.FitOverhead(ms)
	if err != nil {
		return badInput(err)
	}
	_, err = fmt.Fprint(cmd.OutOrStdout(), res.String())
	return err
}
