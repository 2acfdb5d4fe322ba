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
	"github.com/servesim/servesim/internal/validate"
	"github.com/spf13/cobra"
)

func newCalibrateCmd() *cobra.Command {
	var (
		bundles            []string
		out, check, cal    string
		use                string
		tp                 int
		noLeaveOneOut, ops bool
		measuredRuns       []string
	)
	cmd := &cobra.Command{
		Use:   "calibrate --profiles BUNDLE [--profiles BUNDLE ...] [-o FILE] | --check BUNDLE [--calibration FILE]",
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

--check BUNDLE prints the median and p90 relative error per table of a
calibration (--calibration FILE, default the embedded one) on BUNDLE's
tables; --use NAME checks the calibration of accelerator NAME instead of
the bundle's own (with the bundle's accelerator specs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(measuredRuns) > 0 {
				if check != "" || len(bundles) > 0 {
					return usageError{fmt.Errorf("--measured fits engine-side terms only; give it without --profiles and --check")}
				}
				return runMeasuredFit(cmd, measuredRuns)
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
	cmd.Flags().StringVar(&cal, "calibration", "", "with --check: calibration YAML to check (default: the embedded calibration)")
	cmd.Flags().StringVar(&use, "use", "", "with --check: check accelerator NAME's calibration (default: the bundle's accelerator)")
	cmd.Flags().StringArrayVar(&measuredRuns, "measured", nil, "fit the engine-side host time per step to a measured run (a run directory, builtin:NAME, or a vllm bench serve result file run against the default scenario); repeat for leave-one-out")
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

// runCheck prints a calibration's accuracy on one bundle's tables.
func runCheck(w io.Writer, ref, calFile, use string, tp int, tpSet, ops bool) error {
	t, err := loadTables("--check", ref, tp, tpSet)
	if err != nil {
		return err
	}
	var file *calibrate.File
	name := "embedded calibration"
	if calFile == "" {
		file, err = calibrate.Builtin()
	} else {
		name = calFile
		var f *os.File
		if f, err = os.Open(calFile); err != nil {
			return badInput(fmt.Errorf("--calibration: %w", err))
		}
		defer f.Close()
		file, err = calibrate.Load(f, calFile)
	}
	if err != nil {
		return badInput(err)
	}
	acc := t.Accelerator
	if use != "" {
		acc = use
	}
	en, ok := file.Entry(acc)
	how := ""
	if !ok {
		if use != "" {
			return badInput(fmt.Errorf("--use %s: %s has no such accelerator (it has %s)", use, name, strings.Join(file.Names(), ", ")))
		}
		lender, ok := file.Fallback()
		if !ok {
			return badInput(fmt.Errorf("%s is not calibrated in %s and no calibration may be lent; give --use NAME", acc, name))
		}
		if en, ok = file.Entry(lender); !ok {
			return fmt.Errorf("calibration file %s names %s as the fallback but has no entry for it", name, lender)
		}
		how = fmt.Sprintf(" (%s is not calibrated: borrowed, as a run would)", acc)
		acc = lender
	}
	rep, err := calibrate.Check(en.Efficiency(), t)
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(w, "calibration %s of %s%s", acc, name, how)
	if l := en.Label(); l != "" {
		fmt.Fprintf(w, " [%s]", l)
	}
	fmt.Fprintf(w, "\nchecked on %s (%s, %s format)\n%s", t.Source, t.Accelerator, t.Format, rep.TableString())
	if ops {
		fmt.Fprint(w, rep.String())
	}
	return nil
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
func runMeasuredFit(cmd *cobra.Command, runs []string) error {
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
			// The default scenario's engine settings: tp 1.
			ms = append(ms, validate.MeasuredRun{Name: name, TP: 1, Validate: func(t validate.Terms) (*validate.Report, error) {
				s, err := config.LoadDefault()
				if err != nil {
					return nil, err
				}
				if b.Model != "" {
					s.Model = b.Model
				}
				s.Predictor.StepOverheadUs, s.Predictor.CollectiveScale = t.OverheadUs, t.CollectiveScale
				return validate.RunBench(b, validate.BenchOptions{Scenario: s, Name: name, File: abs})
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
