package perf

import (
	"io/fs"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/servesim/servesim/internal/assets"
)

// refEngineNs is the engine time of step b over the profile p as
// WithEngineTime documents it, written out from EngineTime's exported
// parts and the profile's breakdown rounded by math.Round (clampNs): the
// reference the per-run engine time (its plain-decode path straight to
// the profile run's decodeNs, and roundNs) must match bit for bit.
func refEngineNs(e *EngineTime, p *Profile, b Batch) int64 {
	if b.Tokens() <= 0 && b.Seqs() <= 0 && b.DPPadTo <= 0 {
		return 0
	}
	d, padded := e.Dispatch(&b)
	b.PadTokens = max(padded-b.Tokens(), 0)
	s := p.Breakdown(&b)
	gpu := float64(clampNs(s.Dense + s.PerSequence + s.Attention + s.MoE))
	if gpu >= math.MaxInt64 {
		return math.MaxInt64
	}
	gpu += e.GapNs(d) + float64(e.StepKernels)*e.StepKernelNs
	launch := float64(e.LaunchKernels(d)) * e.LaunchNs
	host := e.Host.Ns(&b)
	if e.Async {
		return clampNs(max(gpu, host+launch))
	}
	return clampNs(max(gpu, launch) + host)
}

// TestEngineTimeDecodeMatchesReference: the per-run engine time over a
// profile's per-run copy, built as assemble builds it (any graph mode,
// async or not), times every step as refEngineNs does: random batches
// (decode-only, mixed, prefill, speculative, data-parallel, MoE-timed,
// with a kv_prefill but no prefill tokens, negative sums) and decode runs
// as an engine makes them (every context a token longer each step, the
// count changing now and then), which take the remembered mean, skew
// rate, kv_big bucket and kvd interval.
func TestEngineTimeDecodeMatchesReference(t *testing.T) {
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hw, model, mt    string
		tp, layers, e, k int
	}{
		{"RTXPRO6000", "meta-llama/Llama-3.1-8B", "llama", 1, 32, 0, 0},
		{"RTXPRO6000", "Qwen/Qwen3-32B", "qwen3", 2, 64, 0, 0},
		{"RTXPRO6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3_moe", 2, 48, 128, 8},
		{"RTX4090", "meta-llama/Llama-3.1-8B", "llama", 1, 32, 0, 0},
	} {
		p, dir, cat := embeddedProfile(t, root, c.hw, c.model, c.mt, c.tp, c.layers, c.e, c.k)
		perLayer, attn, perStep := cat.Kernels(c.e > 0)
		rapid.Check(t, func(rt *rapid.T) {
			e := EngineTime{
				Mode:   GraphMode(rapid.IntRange(0, int(GraphsNone)).Draw(rt, "mode")),
				Layers: c.layers, LayerKernels: perLayer, AttnKernels: attn, StepKernels: perStep + StepKernels,
				GapEagerNs: KernelGapEagerNs, GapGraphNs: KernelGapGraphNs, StepKernelNs: p.MinKernelNs(),
				Host: DefaultHostTime, LaunchNs: KernelLaunchNs, Async: rapid.Bool().Draw(rt, "async"),
			}
			if e.Mode != GraphsNone {
				e.CaptureSizes = DefaultCaptureSizes(rapid.SampledFrom([]int{128, 256, 1024}).Draw(rt, "seqs"), 2048)
			}
			run := ForRun(WithEngineTime(p, e), nil).(*profileEngine)
			if run.own.p == nil {
				rt.Fatalf("the per-run engine time does not reach the profile run")
			}
			check := func(b Batch) {
				pad := b.PadTokens
				if got, want := run.StepTime(&b), refEngineNs(&e, p, b); got != want {
					rt.Fatalf("%s %+v: %d ns, reference %d ns", dir, b, got, want)
				}
				if b.PadTokens != pad {
					rt.Fatalf("padding %d left as %d", pad, b.PadTokens)
				}
			}
			for range 20 {
				if rapid.IntRange(0, 3).Draw(rt, "kind") == 0 {
					check(randomBatch(rt))
					continue
				}
				decodeRun(rt, check)
			}
		})
	}
}

// randomBatch is any step, decode-only ones included.
func randomBatch(rt *rapid.T) Batch {
	var b Batch
	switch rapid.IntRange(0, 3).Draw(rt, "prefill") {
	case 0:
		b.PrefillSeqs = rapid.IntRange(1, 4).Draw(rt, "pseqs")
		b.PrefillTokens = rapid.IntRange(b.PrefillSeqs, 4096).Draw(rt, "pc")
		b.PrefillKV = rapid.SampledFrom([]int{0, 0, 512, 3000, 40000}).Draw(rt, "kp")
	case 1:
		b.PrefillKV = rapid.IntRange(1, 100).Draw(rt, "kpOnly")
	}
	b.NumDecode = rapid.SampledFrom([]int{0, 1, 2, 3, 7, 30, 64, 100, 256, 300, decodePlanLimit - 1, decodePlanLimit, 2000}).Draw(rt, "n")
	if b.NumDecode > 0 {
		lo := rapid.IntRange(0, 40000).Draw(rt, "min")
		hi := rapid.IntRange(lo, lo+rapid.SampledFrom([]int{0, 1, 16, 5000, 100000}).Draw(rt, "spread")).Draw(rt, "max")
		b.DecodeKVMin, b.DecodeKVMax = lo, hi
		mean := rapid.IntRange(lo, hi).Draw(rt, "mean")
		b.DecodeKVSum = int64(mean)*int64(b.NumDecode) + int64(rapid.IntRange(0, b.NumDecode-1).Draw(rt, "rem"))
		if rapid.IntRange(0, 20).Draw(rt, "negative") == 0 {
			b.DecodeKVSum = -b.DecodeKVSum - 1
		}
	}
	switch rapid.IntRange(0, 6).Draw(rt, "other") {
	case 0:
		b.SpecTokens = rapid.IntRange(1, 3*b.NumDecode+1).Draw(rt, "spec")
	case 1:
		b.DPPadTo = rapid.IntRange(0, 700).Draw(rt, "padTo")
		b.DPSynced = rapid.Bool().Draw(rt, "synced")
		b.DPMode = Dispatch(rapid.IntRange(0, int(RunFull)).Draw(rt, "dpMode"))
	case 2:
		b.MoENs = rapid.Int64Range(-5, 5_000_000).Draw(rt, "moeNs")
	}
	b.PadTokens = rapid.SampledFrom([]int{0, 0, 3, -2}).Draw(rt, "callerPad")
	return b
}

// decodeRun checks a run of decode steps: n requests whose contexts grow
// by a token a step, now and then one joining (a short context) or
// leaving, or the step's sum off the pattern by a token.
func decodeRun(rt *rapid.T, check func(Batch)) {
	n := rapid.IntRange(1, 300).Draw(rt, "runN")
	lo := rapid.IntRange(0, 20000).Draw(rt, "runMin")
	hi := lo + rapid.IntRange(0, 20000).Draw(rt, "runSpread")
	sum := int64(rapid.IntRange(lo, hi).Draw(rt, "runMean"))*int64(n) + int64(rapid.IntRange(0, n-1).Draw(rt, "runRem"))
	for range rapid.IntRange(1, 60).Draw(rt, "steps") {
		b := Batch{NumDecode: n, DecodeKVMin: lo, DecodeKVMax: hi, DecodeKVSum: sum}
		if n == 1 {
			b.DecodeKVMin, b.DecodeKVSum = hi, int64(hi)
		}
		check(b)
		lo, hi, sum = lo+1, hi+1, sum+int64(n)
		switch rapid.IntRange(0, 12).Draw(rt, "change") {
		case 0:
			if n > 1 {
				n--
				sum -= int64(lo)
			}
		case 1:
			n++
			lo = rapid.IntRange(0, lo).Draw(rt, "joiner")
			sum += int64(lo)
		case 2:
			sum += int64(rapid.IntRange(-1, 1).Draw(rt, "off"))
		}
		sum = max(min(sum, int64(hi)*int64(n)), int64(lo)*int64(n))
	}
}
