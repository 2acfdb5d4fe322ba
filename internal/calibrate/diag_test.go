package calibrate

import (
	"io/fs"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/perf"
)

var (
	qwenModel  = perf.RooflineModel{Layers: 64, Hidden: 5120, Intermediate: 25600, Heads: 64, KVHeads: 8, HeadDim: 128, Vocab: 151936, QKNorm: true}
	llamaModel = perf.RooflineModel{Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 128256}
	rtxpro     = perf.RooflineHW{PeakFLOPS: 500e12, MemBandwidth: 1597e9}
)

func pts(t *testing.T, dir string) []perf.Point {
	fsys, _ := fs.Sub(assets.FS(), "profiles")
	p, err := perf.ReadPoints(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiag(t *testing.T) {
	q1 := pts(t, "RTXPRO6000/Qwen/Qwen3-32B/bf16/tp1")
	l1 := pts(t, "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1")
	start := time.Now()
	eff, rep, err := Fit([]Input{{Points: q1, Model: qwenModel, HW: rtxpro, TP: 1}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit %v: %+v\nin-sample:\n%s", time.Since(start), eff, rep)
	for _, c := range []struct {
		name string
		m    perf.RooflineModel
		dir  string
		tp   int
	}{{"llama tp1", llamaModel, "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1", 1},
		{"llama tp2", llamaModel, "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp2", 2},
		{"qwen tp2", qwenModel, "RTXPRO6000/Qwen/Qwen3-32B/bf16/tp2", 2}} {
		r, err := perf.NewRoofline(c.m, rtxpro, eff, c.tp)
		if err != nil {
			t.Fatal(err)
		}
		p := l1
		if c.name != "llama tp1" {
			p = pts(t, c.dir)
		}
		t.Logf("%s:\n%s", c.name, Evaluate(r, p))
	}
}

func TestAttnDiag(t *testing.T) {
	q1 := pts(t, "RTXPRO6000/Qwen/Qwen3-32B/bf16/tp1")
	e := perf.DefaultEfficiency
	e.AttnTileQ, e.AttnUnits = 64, 188
	var s []sample
	for _, p := range q1 {
		if p.Category == perf.CategoryAttention {
			s = append(s, sample{in: Input{Model: qwenModel, HW: rtxpro, TP: 1}, p: p})
		}
	}
	eff, c, _ := fitGroup(e, attnParams, subsample(s, 5000))
	t.Logf("cost %g %+v", c, eff)
	attnDiag(t, eff)
}
