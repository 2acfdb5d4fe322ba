package perf

import (
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"pgregory.net/rapid"

	"github.com/servesim/servesim/internal/assets"
)

// TestProfileRunMatchesProfile: the per-run copy of every embedded bundle
// predicts what the Profile predicts, bit for bit, over a long sequence of
// batches (its plans, remembered kvd intervals and padding terms persist
// across them): steps without prefill at every decode count on both sides
// of the memo's limit (decode-only ones through decodeStep), and mixed and
// pure prefill steps, which it looks up in full.
func TestProfileRunMatchesProfile(t *testing.T) {
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hw, model, mt    string
		tp, layers, e, k int
	}{
		{"RTXPRO6000", "meta-llama/Llama-3.1-8B", "llama", 1, 32, 0, 0},
		{"RTXPRO6000", "meta-llama/Llama-3.1-8B", "llama", 2, 32, 0, 0},
		{"RTXPRO6000", "Qwen/Qwen3-32B", "qwen3", 1, 64, 0, 0},
		{"RTXPRO6000", "Qwen/Qwen3-32B", "qwen3", 2, 64, 0, 0},
		{"RTXPRO6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3_moe", 2, 48, 128, 8},
		{"RTX4090", "meta-llama/Llama-3.1-8B", "llama", 1, 32, 0, 0},
	} {
		p, dir, _ := embeddedProfile(t, root, c.hw, c.model, c.mt, c.tp, c.layers, c.e, c.k)
		run := ForRun(p, nil)
		if _, ok := run.(*profileRun); !ok {
			t.Fatalf("%s: ForRun gave %T, want the per-run copy", dir, run)
		}
		planned := 0
		rapid.Check(t, func(rt *rapid.T) {
			var b Batch
			if rapid.IntRange(0, 4).Draw(rt, "prefill") == 0 {
				b.PrefillSeqs = rapid.IntRange(1, 4).Draw(rt, "pseqs")
				b.PrefillTokens = rapid.IntRange(b.PrefillSeqs, 8192).Draw(rt, "pc")
				b.PrefillKV = rapid.SampledFrom([]int{0, 0, 512, 3000, 40000}).Draw(rt, "kp")
			}
			b.NumDecode = rapid.SampledFrom([]int{0, 1, 2, 3, 7, 30, 31, 64, 100, 256, 300, decodePlanLimit - 1, decodePlanLimit, 2000}).Draw(rt, "n")
			if b.NumDecode > 0 {
				lo := rapid.IntRange(0, 40000).Draw(rt, "min")
				hi := rapid.IntRange(lo, lo+rapid.SampledFrom([]int{0, 1, 16, 5000, 100000}).Draw(rt, "spread")).Draw(rt, "max")
				b.DecodeKVMin, b.DecodeKVMax = lo, hi
				if b.NumDecode == 1 {
					b.DecodeKVMin = hi
				}
				mean := rapid.IntRange(b.DecodeKVMin, hi).Draw(rt, "mean")
				b.DecodeKVSum = int64(mean)*int64(b.NumDecode) + int64(rapid.IntRange(0, b.NumDecode-1).Draw(rt, "rem"))
			}
			b.PadTokens = rapid.SampledFrom([]int{0, 0, 3, 17}).Draw(rt, "pad")
			want, got := p.Breakdown(&b), p.breakdown(&b, run.(*profileRun))
			if math.Float64bits(got.Attention) != math.Float64bits(want.Attention) || got != want {
				rt.Fatalf("%s %+v: per-run %+v, profile %+v", dir, b, got, want)
			}
			if g, w := run.StepTime(&b), p.StepTime(&b); g != w {
				rt.Fatalf("%s %+v: per-run step %d ns, profile %d", dir, b, g, w)
			}
			if b.PrefillTokens == 0 && b.PrefillKV == 0 && b.NumDecode > 0 && b.NumDecode < decodePlanLimit {
				planned++
			}
		})
		// Decode runs as an engine makes them: every context a token
		// longer each step, members joining and leaving now and then
		// (the per-run copy's remembered positions and buckets).
		rapid.Check(t, func(rt *rapid.T) {
			n := rapid.IntRange(1, 300).Draw(rt, "n")
			lo := rapid.IntRange(0, 20000).Draw(rt, "min")
			hi := lo + rapid.IntRange(0, 20000).Draw(rt, "spread")
			mean := rapid.IntRange(lo, hi).Draw(rt, "mean")
			for range 300 {
				b := Batch{NumDecode: n, DecodeKVMin: lo, DecodeKVMax: hi, DecodeKVSum: int64(mean) * int64(n),
					PadTokens: rapid.SampledFrom([]int{0, 0, 0, 3, 17}).Draw(rt, "pad")}
				if n == 1 {
					b.DecodeKVMin, b.DecodeKVSum = hi, int64(hi)
				}
				if g, w := run.StepTime(&b), p.StepTime(&b); g != w {
					rt.Fatalf("%s %+v: per-run step %d ns, profile %d", dir, b, g, w)
				}
				if g, w := run.(*profileRun).decodeStep(&b), p.Breakdown(&b); !sameBreakdown(g, w) {
					rt.Fatalf("%s %+v: decodeStep %+v, profile %+v", dir, b, g, w)
				}
				lo, hi, mean = lo+1, hi+1, mean+1
				switch rapid.IntRange(0, 20).Draw(rt, "change") {
				case 0:
					n = max(1, n-1)
				case 1:
					n++
				case 2:
					lo = 0 // a new member
				}
				mean = max(lo, min(mean, hi))
			}
		})
		if planned == 0 {
			t.Errorf("%s: no step took a plan", dir)
		}
		rows := 0
		for _, h := range run.(*profileRun).hot {
			if h.built && h.flags&planRows != 0 {
				rows++
			}
		}
		if rows == 0 {
			t.Errorf("%s: no plan takes the row lookup (nCorners.at)", dir)
		}
	}
}

// sameBreakdown reports that a and b are the same, bit for bit.
func sameBreakdown(a, b StepBreakdown) bool {
	return math.Float64bits(a.Dense) == math.Float64bits(b.Dense) &&
		math.Float64bits(a.PerSequence) == math.Float64bits(b.PerSequence) &&
		math.Float64bits(a.Attention) == math.Float64bits(b.Attention) &&
		math.Float64bits(a.MoE) == math.Float64bits(b.MoE)
}

// embeddedProfile loads the embedded bf16 profile of model on hw at tp
// (root: the embedded profiles), with the layer and expert counts given,
// and returns it with its bundle's directory and kernel catalog.
func embeddedProfile(t *testing.T, root fs.FS, hw, model, mt string, tp, layers, experts, perTok int) (*Profile, string, *Catalog) {
	t.Helper()
	dir, err := FindBundle(root, hw, model, "bf16", tp)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := LoadCatalog(assets.FS(), mt)
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(root, dir, Arch{ModelType: mt, NumLayers: layers, NumExperts: experts, ExpertsPerTok: perTok}, cat)
	if err != nil {
		t.Fatal(err)
	}
	return p, dir, cat
}

// TestRowLookupAcrossSamples: a plan's remembered kvd interval serves
// exactly the contexts bracket places inside it (kvdSegment's position
// test), whatever the table's values: on a table whose times span many
// magnitudes (so that y + (y1 - y) is often not y1), decode runs whose
// mean and longest contexts walk up and down across every kvd sample,
// one token a step, take what the Profile predicts, bit for bit.
func TestRowLookupAcrossSamples(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var csv strings.Builder
		csv.WriteString("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n")
		for _, n := range []int{1, 2, 4} {
			for _, kvd := range []int{16, 32, 64, 128} {
				v := rapid.Float64Range(1, 10).Draw(rt, "mantissa") * math.Pow(10, float64(rapid.IntRange(-6, 6).Draw(rt, "exp")))
				fmt.Fprintf(&csv, "0,0,%d,%d,%s\n", n, kvd, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		fsys := tinyFS()
		fsys[tinyDir+"/attention.csv"] = &fstest.MapFile{Data: []byte(csv.String())}
		cat, err := LoadCatalog(fsys, "tiny")
		if err != nil {
			rt.Fatal(err)
		}
		p, err := LoadProfile(fsys, tinyDir, Arch{ModelType: "tiny", NumLayers: 2}, cat)
		if err != nil {
			rt.Fatal(err)
		}
		run := ForRun(p, nil).(*profileRun)
		n := rapid.IntRange(1, 5).Draw(rt, "n")
		kv, spread := rapid.IntRange(1, 150).Draw(rt, "kv"), rapid.IntRange(0, 40).Draw(rt, "spread")
		up := true
		for range 400 {
			b := Batch{NumDecode: n, DecodeKVMin: kv, DecodeKVMax: kv + spread, DecodeKVSum: int64(kv) * int64(n)}
			if n > 1 {
				b.DecodeKVSum += int64(spread)
			}
			if g, w := run.StepTime(&b), p.StepTime(&b); g != w {
				rt.Fatalf("%+v: per-run step %d ns, profile %d", b, g, w)
			}
			if g, w := run.decodeStep(&b), p.Breakdown(&b); !sameBreakdown(g, w) {
				rt.Fatalf("%+v: decodeStep %+v, profile %+v", b, g, w)
			}
			if kv <= 1 || kv >= 160 || rapid.IntRange(0, 60).Draw(rt, "turn") == 0 {
				up = !up
			}
			if up {
				kv++
			} else {
				kv--
			}
		}
	})
}
