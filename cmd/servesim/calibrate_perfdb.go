package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/spf13/cobra"
)

// calibrate --perfdb and --check perfdb:NAME: fits and checks on the
// per-op kernel database.

// openPerfDBInput opens system's tables in the performance database dir
// (builtin: the embedded copy) and selects the rows of the accelerator
// whose perfdb_system it is.
func openPerfDBInput(flag, dir, system, version string) (*calibrate.PerfDBInput, error) {
	var fsys fs.FS
	switch dir {
	case "", "builtin":
		fsys = perfdb.Embedded()
	default:
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			return nil, badInput(fmt.Errorf("--perfdb: %q is not a directory (give AIConfigurator's systems folder, or builtin)", dir))
		}
		fsys = os.DirFS(dir)
	}
	acc, err := calibrate.AcceleratorOfSystem(system)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: %w", flag, err))
	}
	db, err := perfdb.Open(fsys, system, "vllm", version)
	if err != nil {
		return nil, badInput(err)
	}
	in, err := calibrate.NewPerfDBInput(db, acc)
	if err != nil {
		return nil, badInput(err)
	}
	return in, nil
}

// perfDBFitFlags are the fit options of calibrate --perfdb.
type perfDBFitFlags struct {
	// smWave: --sm-wave; fp8Waves: --fp8-waves; fp8Only: --quant-only
	// (or its older name --fp8-only); allReduceOnly: --allreduce-only.
	smWave, fp8Waves, fp8Only, allReduceOnly bool
	// quantFormats: --quant-formats (fp8, fp8_block, nvfp4).
	quantFormats []string
}

// runPerfDBFit fits the calibration of system's accelerator on its
// database tables (with fp8Only, only the quantised GEMM terms of its existing
// entry) and writes it (to out, keeping its other entries, or to stdout).
func runPerfDBFit(cmd *cobra.Command, dir, system, version, out string, fl perfDBFitFlags) error {
	in, err := openPerfDBInput("--system", dir, system, version)
	if err != nil {
		return err
	}
	builtin, err := calibrate.Builtin()
	if err != nil {
		return err
	}
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
	ew := cmd.ErrOrStderr()
	start := time.Now()
	opts := calibrate.Options{Progress: func(stage string) {
		fmt.Fprintf(ew, "calibrate: %s (%.0f s so far)\n", stage, time.Since(start).Seconds())
	}}
	opts.FP8Waves = fl.fp8Waves
	formats := map[string]string{"fp8": calibrate.TableGEMMFP8, "fp8_block": calibrate.TableGEMMFP8Block, "nvfp4": calibrate.TableGEMMNVFP4}
	for _, f := range fl.quantFormats {
		table, ok := formats[f]
		if !ok {
			return badInput(fmt.Errorf("--quant-formats: unknown format %q (want fp8, fp8_block or nvfp4)", f))
		}
		opts.QuantTables = append(opts.QuantTables, table)
	}
	if len(fl.quantFormats) > 0 && !fl.fp8Only {
		return badInput(errors.New("--quant-formats goes with --quant-only"))
	}
	if fl.smWave {
		opts.UnitsPerSM, opts.DecodeUnitsPerSM = calibrate.SMOccupancies, calibrate.DecodeOccupancies
	}
	var entry *calibrate.Entry
	var rep *calibrate.Report
	if fl.fp8Only && fl.allReduceOnly {
		return badInput(errors.New("--quant-only and --allreduce-only: give one (run the command twice with the same -o FILE for both)"))
	}
	if fl.fp8Only || fl.allReduceOnly {
		flag, what := "--quant-only", "quantised GEMM terms"
		if fl.allReduceOnly {
			flag, what = "--allreduce-only", "all-reduce constants"
		}
		base, ok := file.Entry(in.Accelerator)
		if !ok {
			if base, ok = builtin.Entry(in.Accelerator); !ok {
				return badInput(fmt.Errorf("%s: neither %s nor the embedded calibration has a %s entry to fit the %s of", flag, outName(out), in.Accelerator, what))
			}
		}
		if fl.allReduceOnly {
			entry, rep, err = calibrate.FitPerfDBAllReduce(in, base)
		} else {
			entry, rep, err = calibrate.FitPerfDBFP8(in, base, opts)
		}
	} else {
		keep, ok := builtin.Entry(calibrate.KeepFrom)
		if !ok {
			return fmt.Errorf("the embedded calibration has no %s entry to keep fields from", calibrate.KeepFrom)
		}
		entry, rep, err = calibrate.FitPerfDB(in, keep, calibrate.KeepFrom, opts)
	}
	if err != nil {
		return badInput(err)
	}
	file.Accelerators[in.Accelerator] = entry
	var buf bytes.Buffer
	if err := calibrate.Write(&buf, file); err != nil {
		return err
	}
	fmt.Fprintf(ew, "calibrated %s on %s (%s)%s; in-sample error:\n%s", in.Accelerator, in.Source, entry.Label(), droppedNote(in), rep.TableString())
	if out == "" {
		_, err = cmd.OutOrStdout().Write(buf.Bytes())
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// outName names the -o file in messages ("-o FILE", or "stdout").
func outName(out string) string {
	if out == "" {
		return "stdout"
	}
	return "-o " + out
}

// runPerfDBCheck prints a calibration's accuracy on a database system's
// tables.
func runPerfDBCheck(w io.Writer, dir, system, version, calFile, use string, ops bool) error {
	if system == "" {
		return usageError{fmt.Errorf("--check perfdb:NAME needs a system name (e.g. perfdb:h100_sxm)")}
	}
	in, err := openPerfDBInput("--check perfdb:"+system, dir, system, version)
	if err != nil {
		return err
	}
	file, name, err := openCalibration(calFile)
	if err != nil {
		return err
	}
	acc, en, how, err := checkedEntry(file, name, in.Accelerator, use)
	if err != nil {
		return err
	}
	rep, err := calibrate.CheckPerfDB(en.Efficiency(), in)
	if err != nil {
		return badInput(err)
	}
	printCalibrationHeader(w, acc, name, how, en)
	if en.FP8Source != "" && en.Kept == "" {
		fmt.Fprintf(w, " [quantised GEMM and all-reduce terms fitted on per-op kernel tables %s]", en.FP8Source)
	}
	fmt.Fprintf(w, "\nchecked on %s (%s; bf16 KV, at most %d tokens per step)%s\n", in.Source, in.Accelerator, calibrate.MaxStepTokens, droppedNote(in))
	if note := in.CollectionNote(); note != "" {
		fmt.Fprintf(w, "modelled as costs of the collection, not of a served step: %s\n", note)
	}
	fmt.Fprint(w, rep.TableString())
	if ops {
		fmt.Fprint(w, rep.String())
	}
	return nil
}

// droppedNote says how many rows of each table were left out as faster
// than the accelerator can run them; "" when none were.
func droppedNote(in *calibrate.PerfDBInput) string {
	var parts []string
	for _, t := range calibrate.PerfDBTables {
		if n := in.Dropped[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s rows", n, t))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; left out as faster than the GPU can run them (above its peak FLOP/s or memory bandwidth): " + strings.Join(parts, ", ")
}
