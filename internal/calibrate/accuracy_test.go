package calibrate

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
)

// profiles is the embedded profile root.
func profiles(t testing.TB) fs.FS {
	t.Helper()
	fsys, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func rooflineModel(t testing.TB, name string) perf.RooflineModel {
	t.Helper()
	c, err := model.Load(model.Builtin(), name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ModelOf(c, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func rtxPro(t testing.TB) perf.RooflineHW {
	t.Helper()
	a, err := hw.Lookup("RTXPRO6000")
	if err != nil {
		t.Fatal(err)
	}
	h, err := HWOf(a, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func bundlePoints(t testing.TB, name string, tp int) []perf.Point {
	t.Helper()
	fsys := profiles(t)
	dir, err := perf.FindBundle(fsys, "RTXPRO6000", name, "bf16", tp)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := perf.ReadPoints(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

// pinned are the accuracy figures the calibration reaches; the test fails
// when a change moves any of them by more than pinTolerance (update them on
// purpose), and independently when any bound is broken.
var pinned = map[string]Stats{
	// calibrated on Qwen3-32B tp1, predicting Llama-3.1-8B tp1 (out of sample)
	"Llama-3.1-8B tp1 dense":     {Median: 0.072, P90: 0.228},
	"Llama-3.1-8B tp1 attention": {Median: 0.050, P90: 0.215},
	// sharded per-op times at tp=2 against the tp2 tables
	"Llama-3.1-8B tp2 dense":     {Median: 0.093, P90: 0.488},
	"Llama-3.1-8B tp2 attention": {Median: 0.059, P90: 0.241},
	"Qwen3-32B tp2 dense":        {Median: 0.080, P90: 0.315},
	"Qwen3-32B tp2 attention":    {Median: 0.056, P90: 0.216},
}

const pinTolerance = 0.015

// TestCalibrationPredictsOtherModel is the acceptance test of the roofline:
// calibrated on ONE bundle (Qwen3-32B, tp1, RTX PRO 6000), it must predict
// another model's tables on the same accelerator (Llama-3.1-8B, tp1) with a
// median absolute error below 10 % and a 90th percentile below 25 % on the
// dense and attention tables, and the sharded tp=2 per-op times of both
// models with a median below 10 %.
func TestCalibrationPredictsOtherModel(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration takes several seconds")
	}
	fsys := profiles(t)
	hwRTX := rtxPro(t)
	qwen, llama := rooflineModel(t, "Qwen/Qwen3-32B"), rooflineModel(t, "meta-llama/Llama-3.1-8B")
	dir, err := perf.FindBundle(fsys, "RTXPRO6000", "Qwen/Qwen3-32B", "bf16", 1)
	if err != nil {
		t.Fatal(err)
	}
	entry, inSample, err := FitBundle(fsys, dir, qwen, hwRTX, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Go through the file format, as a user of `servesim calibrate` would.
	var buf bytes.Buffer
	if err := Write(&buf, &File{Accelerators: map[string]*Entry{"RTXPRO6000": entry}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("calibration file:\n%s", buf.String())
	f, err := Load(&buf, "calibration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eff, ok := f.Lookup("rtxpro6000")
	if !ok {
		t.Fatal("RTXPRO6000 missing from the calibration file")
	}
	t.Logf("in-sample (Qwen3-32B tp1):\n%s", inSample)

	var out strings.Builder
	fmt.Fprintf(&out, "%-28s %7s %7s %7s\n", "table (calibrated on Qwen3-32B tp1)", "rows", "median", "p90")
	for _, c := range []struct {
		name  string
		m     perf.RooflineModel
		model string
		tp    int
		p90   bool // the p90 bound applies
	}{
		{"Llama-3.1-8B tp1", llama, "meta-llama/Llama-3.1-8B", 1, true},
		{"Llama-3.1-8B tp2", llama, "meta-llama/Llama-3.1-8B", 2, false},
		{"Qwen3-32B tp2", qwen, "Qwen/Qwen3-32B", 2, false},
	} {
		r, err := perf.NewRoofline(c.m, hwRTX, eff, c.tp)
		if err != nil {
			t.Fatal(err)
		}
		rep := Evaluate(r, bundlePoints(t, c.model, c.tp))
		if c.tp == 1 {
			t.Logf("%s per op:\n%s", c.name, rep)
		}
		for _, table := range []string{perf.CategoryDense, perf.CategoryAttention} {
			s := rep.Tables[table]
			key := c.name + " " + table
			fmt.Fprintf(&out, "%-35s %7d %6.1f%% %6.1f%%\n", key, s.Count, 100*s.Median, 100*s.P90)
			if s.Median >= 0.10 {
				t.Errorf("%s: median error %.1f%% >= 10%%", key, 100*s.Median)
			}
			if c.p90 && s.P90 >= 0.25 {
				t.Errorf("%s: p90 error %.1f%% >= 25%%", key, 100*s.P90)
			}
			if want, ok := pinned[key]; !ok {
				t.Errorf("%s: no pinned figures", key)
			} else if math.Abs(s.Median-want.Median) > pinTolerance || math.Abs(s.P90-want.P90) > pinTolerance {
				t.Errorf("%s: median %.3f p90 %.3f moved from the pinned %.3f / %.3f", key, s.Median, s.P90, want.Median, want.P90)
			}
		}
	}
	t.Logf("\n%s", out.String())
}
