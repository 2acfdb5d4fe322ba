package moe

import (
	"io/fs"
	"math"
	"testing"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/perf"
)

// qwenProfile loads the embedded Qwen3-30B-A3B bundle (128 experts, top-8,
// 48 layers) at tp1.
func qwenProfile(t *testing.T) *perf.Profile {
	t.Helper()
	cat, err := perf.LoadCatalog(assets.FS(), "qwen3_moe")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := perf.FindBundle(fsys, "RTXPRO6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", "bf16", 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := perf.LoadProfile(fsys, dir, perf.Arch{ModelType: "qwen3_moe", NumLayers: 48, NumExperts: 128, ExpertsPerTok: 8}, cat)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRankTimeIsSingleRankPredictor: with one EP rank the model's MoE time
// is exactly the profile predictor's own MoE share of a step of the same
// tokens; with two, a balanced busiest rank is the same table at the
// gathered tokens and the distinct local experts, counted by hand.
func TestRankTimeIsSingleRankPredictor(t *testing.T) {
	p := qwenProfile(t)
	for _, tokens := range []int{1, 7, 64, 300, 2048, 4096} {
		one, err := New(Config{Layers: 48, Experts: 128, TopK: 8, EP: 1, Timer: p}, 1)
		if err != nil {
			t.Fatal(err)
		}
		b := perf.Batch{PrefillTokens: tokens, PrefillSeqs: 1}
		want := p.Breakdown(&b).MoE
		if got := one.StepNs(tokens); math.Abs(float64(got)-want) > 0.5 {
			t.Errorf("ep 1, %d tokens: %d ns, the single-rank predictor says %.1f", tokens, got, want)
		}
		two, err := New(Config{Layers: 48, Experts: 128, TopK: 8, EP: 2, Timer: p}, 1)
		if err != nil {
			t.Fatal(err)
		}
		// 64 local experts; a token misses a given expert with
		// probability 1 - 8/128.
		local := math.Round(64 * (1 - math.Pow(120.0/128, float64(tokens))))
		local = math.Min(math.Max(local, 8), 64)
		balanced := float64(tokens) * 8 / 2
		if got, want := two.LayerNs(tokens, balanced), p.MoELayerNs(float64(tokens), local); got != want {
			t.Errorf("ep 2, %d tokens: layer %.1f ns, want the table at (%d, %.0f) = %.1f", tokens, got, tokens, local, want)
		}
	}
}

// TestAllGatherReduceScatterByHand: two RTX PRO 6000 without peer-to-peer
// (PCIe Gen5 63 GB/s, staged through host memory): NCCL bus bandwidth
// 0.75 × 63/2 = 23.625 GB/s and 15 µs per operation. 256 tokens of hidden
// 2048 in bf16 gather 1,048,576 bytes: each of the all-gather and the
// reduce-scatter takes 15000 + 1/2 × 1048576 / 23.625e9 s = 37192.08 ns,
// rounded 37192; a layer pays both. One token: 15086.69 -> 15087.
func TestAllGatherReduceScatterByHand(t *testing.T) {
	comm := perf.NewAllReduce(2, perf.Interconnect{LinkBW: 63e9}, true)
	a := AllGatherReduceScatter{Comm: comm, HiddenBytes: 2048 * 2}
	for _, c := range []struct {
		tokens int
		want   int64
	}{{256, 2 * 37192}, {1, 2 * 15087}, {0, 0}} {
		if got := a.LayerNs(c.tokens, 0); got != c.want {
			t.Errorf("%d tokens: %d ns, want %d", c.tokens, got, c.want)
		}
	}
	// The step adds it once per MoE layer on top of the experts.
	m, err := New(Config{Layers: 48, Experts: 128, TopK: 8, EP: 1, Timer: constTimer(1000), Dispatch: a}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.StepNs(256), int64(48*1000+48*2*37192); got != want {
		t.Errorf("step %d ns, want %d", got, want)
	}
}

type constTimer float64

func (c constTimer) MoELayerNs(tokens, activated float64) float64 { return float64(c) }

// TestZipfSkewRaisesStepTime: with common random numbers (one seed: the
// same per-layer rankings and the same normal draws), the mean MoE step
// time rises with the Zipf skew.
func TestZipfSkewRaisesStepTime(t *testing.T) {
	p := qwenProfile(t)
	prev := 0.0
	for _, skew := range []float64{0, 0.25, 0.5, 1, 1.5, 2} {
		m, err := New(Config{Layers: 48, Experts: 128, TopK: 8, EP: 2, Timer: p, Routing: Routing{Kind: Zipf, Skew: skew}}, 7)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for i := 0; i < 200; i++ {
			sum += float64(m.StepNs(512))
		}
		mean := sum / 200
		t.Logf("skew %.2f: mean MoE step %.0f ns", skew, mean)
		if mean <= prev {
			t.Fatalf("skew %.2f: mean %.0f ns not above %.0f ns at the smaller skew", skew, mean, prev)
		}
		prev = mean
	}
}

// TestSharesAndDeterminism: the shares of a layer sum to 1, uniform
// routing gives every rank 1/ep, and a seed reproduces the draws.
func TestSharesAndDeterminism(t *testing.T) {
	for _, r := range []Routing{{}, {Kind: Zipf, Skew: 1.2}} {
		a, err := New(Config{Layers: 4, Experts: 128, TopK: 8, EP: 4, Timer: constTimer(1), Routing: r}, 3)
		if err != nil {
			t.Fatal(err)
		}
		for l := 0; l < 4; l++ {
			sum := 0.0
			for rank := 0; rank < 4; rank++ {
				sum += a.Share(l, rank)
				if r.Kind == Uniform && math.Abs(a.Share(l, rank)-0.25) > 1e-12 {
					t.Errorf("uniform share %g, want 0.25", a.Share(l, rank))
				}
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("%v layer %d: shares sum to %g", r, l, sum)
			}
		}
	}
	p := qwenProfile(t)
	x, _ := New(Config{Layers: 48, Experts: 128, TopK: 8, EP: 2, Timer: p}, 9)
	y, _ := New(Config{Layers: 48, Experts: 128, TopK: 8, EP: 2, Timer: p}, 9)
	for i := 0; i < 50; i++ {
		if a, b := x.StepNs(100+i), y.StepNs(100+i); a != b {
			t.Fatalf("step %d: %d != %d with one seed", i, a, b)
		}
	}
}

func TestBadConfigs(t *testing.T) {
	for _, c := range []Config{
		{Layers: 0, Experts: 128, TopK: 8, EP: 2, Timer: constTimer(1)},
		{Layers: 1, Experts: 128, TopK: 8, EP: 3, Timer: constTimer(1)},
		{Layers: 1, Experts: 128, TopK: 0, EP: 2, Timer: constTimer(1)},
		{Layers: 1, Experts: 128, TopK: 8, EP: 2},
		{Layers: 1, Experts: 128, TopK: 8, EP: 2, Timer: constTimer(1), Routing: Routing{Kind: Zipf, Skew: math.NaN()}},
	} {
		if _, err := New(c, 1); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
