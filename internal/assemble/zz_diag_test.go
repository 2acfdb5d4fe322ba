package assemble

import (
	"fmt"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/quant"
)

func TestZZDiag(t *testing.T) {
	for _, c := range []struct {
		h, m, q string
		tp, T   int
		dec     int
	}{
		{"B200", "Qwen/Qwen3-32B", "", 1, 8192, 0},
		{"B200", "meta-llama/Llama-3.1-70B", "", 8, 8192, 0},
		{"B200", "meta-llama/Llama-3.1-70B", "modelopt_fp4", 1, 8192, 0},
		{"B200", "meta-llama/Llama-3.1-70B", "fp8", 1, 8192, 0},
		{"H200", "Qwen/Qwen3-32B", "", 8, 0, 128},
		{"H200", "meta-llama/Llama-3.1-8B", "fp8", 1, 2048, 0},
	} {
		s, _ := config.Parse([]byte(fmt.Sprintf("model: %s\nhardware: %s\npredictor: {kind: perfdb}\n", c.m, c.h)), "x")
		m, err := model.Load(model.Builtin(), c.m)
		if err != nil {
			t.Fatal(err)
		}
		acc, _ := hw.Lookup(c.h)
		qf := quant.Default()
		if c.q != "" {
			qf, _ = quant.Parse(quant.Spec{Dtype: "bf16", Quantization: c.q})
		}
		dbs, _ := newPerfDBs(s, config.Source{})
		_, r, db, err := measuredPredictor(s, config.Source{}, dbs, m, acc, c.tp, 1, qf)
		if err != nil {
			t.Fatal(err)
		}
		shape, _ := kernelShape(s, m, acc, c.tp, qf)
		k, _ := db.Kernels(shape)
		b := &perf.Batch{PrefillTokens: c.T, PrefillSeqs: 1}
		if c.dec > 0 {
			b = &perf.Batch{NumDecode: c.dec, DecodeKVSum: int64(c.dec) * 2048, DecodeKVMax: 2048, DecodeKVMin: 2048}
		}
		T := b.Tokens()
		L := float64(m.NumLayers)
		fmt.Printf("%s %s %s tp%d T%d:\n", c.h, c.m, c.q, c.tp, T)
		for _, op := range []string{perf.OpQKVProj, perf.OpOProj, perf.OpGateUpProj, perf.OpDownProj} {
			n, kk := r.LinearShape(op)
			d, ok := k.GEMM(qf.Quantized(), T, n, kk)
			fmt.Printf("  %-12s n%6d k%6d roof %9.1f db %9.1f (%v) %+.1f%%\n", op, n, kk, L*r.OpNs(op, b)/1e3, L*d/1e3, ok, 100*(d/r.OpNs(op, b)-1))
		}
		n, kk := r.LinearShape(perf.OpLMHead)
		d, ok := k.GEMM(false, b.Rows(), n, kk)
		fmt.Printf("  lm_head n%d roof %.1f db %.1f (%v)\n", n, r.OpNs(perf.OpLMHead, b)/1e3, d/1e3, ok)
		var a float64
		if c.dec > 0 {
			a, ok = k.GenerationAttention(c.dec, 2048)
		} else {
			a, ok = k.ContextAttention(1, float64(T))
		}
		fmt.Printf("  attention roof %.1f db %.1f (%v) %+.1f%%\n", L*r.OpNs(perf.OpAttention, b)/1e3, L*a/1e3, ok, 100*(a/r.OpNs(perf.OpAttention, b)-1))
	}
}
