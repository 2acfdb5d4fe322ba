package perf

import (
	"math"
	"strings"
	"testing"
)

// tinyModel and tinyHW make the hand computations below easy to follow.
var (
	tinyModel = RooflineModel{Layers: 2, Hidden: 1024, Intermediate: 4096, Heads: 8, KVHeads: 2,
		HeadDim: 128, Vocab: 32000, BytesPerElem: 2}
	tinyHW = RooflineHW{PeakFLOPS: 1e14, MemBandwidth: 1e12}
	// Sharpness 1 makes every op time compute + memory (a plain sum),
	// CacheSpeed 1 makes cache hits cost as much as memory traffic.
	tinyEff = Efficiency{Compute: 0.5, Memory: 0.5, LaunchNs: 1000, Sharpness: 1,
		CacheBytes: 1e9, CacheSpeed: 1, SamplerPasses: 2, SamplerNs: 5000,
		AttnCompute: 0.5, AttnMemory: 0.5, AttnDecodeMemory: 0.5, AttnLaunchNs: 3000,
		AttnDecodeLaunchNs: 2000, AttnSharpness: 1, AttnTileQ: 64, AttnUnits: 0,
		AttnUnitNs: 100, AttnEmptyNs: 10, AttnCacheBytes: 1e9, AttnCacheSpeed: 2}
)

func nearNs(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.6f, want %.6f", what, got, want)
	}
}

func TestRooflineOpsByHand(t *testing.T) {
	for _, c := range []struct {
		name string
		tp   int
		op   string
		b    Batch
		want float64 // ns
	}{
		// qkv_proj, 100 tokens: N = (8+2*2)*128 = 1536.
		// FLOPs 2*100*1024*1536 = 314572800 at 5e13 -> 6291.456 ns;
		// bytes (1024*1536 + 100*1024 + 100*1536)*2 = 3657728 at 5e11 -> 7315.456 ns.
		{"qkv tp1", 1, OpQKVProj, Batch{PrefillTokens: 100, PrefillSeqs: 1}, 1000 + 6291.456 + 7315.456},
		// tp2: 4 heads, 1 KV head: N = 768.
		// FLOPs 157286400 -> 3145.728; bytes (786432+102400+76800)*2 = 1931264 -> 3862.528.
		{"qkv tp2", 2, OpQKVProj, Batch{PrefillTokens: 100, PrefillSeqs: 1}, 1000 + 3145.728 + 3862.528},
		// down_proj tp2, 10 tokens: K = 2048, N = 1024.
		// FLOPs 2*10*2048*1024 = 41943040 -> 838.8608; bytes (2097152+20480+10240)*2 = 4255744 -> 8511.488.
		{"down tp2", 2, OpDownProj, Batch{NumDecode: 10, DecodeKVSum: 10}, 1000 + 838.8608 + 8511.488},
		// lm_head is per sequence: 3 sequences (one prefill of 50 tokens, two decodes).
		// FLOPs 2*3*1024*32000 = 196608000 -> 3932.16; bytes (32768000+3072+96000)*2 = 65734144 -> 131468.288.
		{"lm_head", 1, OpLMHead, Batch{PrefillTokens: 50, PrefillSeqs: 1, NumDecode: 2, DecodeKVSum: 20}, 1000 + 3932.16 + 131468.288},
		// layernorm: 4*100*1024*2 = 819200 bytes -> 1638.4 ns (all traffic "hits" at memory speed).
		{"layernorm", 1, OpLayernorm, Batch{PrefillTokens: 100, PrefillSeqs: 1}, 1000 + 1638.4},
		// act_fn tp2: 3*100*2048*2 = 1228800 bytes -> 2457.6.
		{"act_fn tp2", 2, OpActFn, Batch{PrefillTokens: 100, PrefillSeqs: 1}, 1000 + 2457.6},
		// sampler: 2 passes over 4 sequences of 32000 fp32 logits = 1024000 bytes -> 2048 ns.
		{"sampler", 1, OpSampler, Batch{NumDecode: 4, DecodeKVSum: 4}, 5000 + 2048},
		// Pure decode, 4 requests of 1000 KV tokens, no wave model: 8 units
		// (4 requests x 2 KV heads) visiting 1000 positions each at
		// 4*64*128 FLOPs / 5e13 = 0.65536 ns, plus 100 ns each -> 6042.88;
		// memory: 4000 tokens x 1024 B of KV + 4 x (2*8*128*2 + 1024) B of
		// q/o/new KV = 4116480 B at 5e11 -> 8232.96.
		{"decode", 1, OpAttention, Batch{NumDecode: 4, DecodeKVSum: 4000, DecodeKVMax: 1000, DecodeKVMin: 1000}, 2000 + 6042.88 + 8232.96},
		// Prefill of 128 tokens, no history: 2 tiles per head, 8 heads = 16
		// units visiting 64+128 = 192 positions per head -> 1536*0.65536 +
		// 16*100; memory: 128*1024 distinct KV bytes, 8*128*512 requested, the
		// rest (393216) cache hits at 2x; q/o/new KV 128*5120 -> (131072 +
		// 655360 + 393216/2) / 5e11.
		{"prefill", 1, OpAttention, Batch{PrefillTokens: 128, PrefillSeqs: 1}, 3000 + 1536*0.65536 + 1600 + 1966.08},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewRoofline(tinyModel, tinyHW, tinyEff, c.tp)
			if err != nil {
				t.Fatal(err)
			}
			nearNs(t, c.op, r.OpNs(c.op, &c.b), c.want)
		})
	}
}

func TestRooflineStepIsSumOfOps(t *testing.T) {
	m := tinyModel
	m.QKNorm = true
	r, err := NewRoofline(m, tinyHW, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{PrefillTokens: 300, PrefillKV: 100, PrefillSeqs: 1, NumDecode: 20, DecodeKVSum: 20000, DecodeKVMax: 1500, DecodeKVMin: 500}
	var sum float64
	ops := map[string]float64{}
	for _, o := range r.Breakdown(&b, nil) {
		sum += o.Count * o.Ns
		ops[o.Op] = o.Count
	}
	if got := r.StepTime(&b); got != int64(math.Round(sum)) {
		t.Errorf("StepTime = %d, breakdown sums to %.1f", got, sum)
	}
	want := map[string]float64{OpEmbedding: 1, OpLayernorm: 4, OpQKVProj: 2, OpQKNorm: 2, OpRotaryEmb: 2,
		OpAttention: 2, OpOProj: 2, OpGateUpProj: 2, OpActFn: 2, OpDownProj: 2,
		OpFinalLayernorm: 1, OpLMHead: 1, OpSampler: 1}
	if len(ops) != len(want) {
		t.Errorf("ops %v, want %v", ops, want)
	}
	for op, n := range want {
		if ops[op] != n {
			t.Errorf("op %s runs %g times, want %g", op, ops[op], n)
		}
	}
}

func TestRooflineMoEOps(t *testing.T) {
	m := tinyModel
	m.Intermediate, m.Experts, m.ExpertsPerTok, m.MoEIntermediate = 0, 8, 2, 512
	r, err := NewRoofline(m, tinyHW, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{PrefillTokens: 64, PrefillSeqs: 1}
	if r.OpNs(OpMoE, &b) <= 0 || r.OpNs(OpGateUpProj, &b) <= 0 {
		// gate_up is not in the step of an MoE model but is still priced.
		t.Errorf("moe %v gate_up %v", r.OpNs(OpMoE, &b), r.OpNs(OpGateUpProj, &b))
	}
	for _, u := range r.Ops() {
		if u.Op == OpGateUpProj || u.Op == OpDownProj || u.Op == OpActFn {
			t.Errorf("MoE model runs dense MLP op %s", u.Op)
		}
	}
	more := Batch{PrefillTokens: 640, PrefillSeqs: 1}
	if r.OpNs(OpMoE, &more) <= r.OpNs(OpMoE, &b) {
		t.Error("MoE time does not grow with tokens")
	}
}

func TestRooflineMonotoneAndEmpty(t *testing.T) {
	r, err := NewRoofline(tinyModel, tinyHW, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.StepTime(&Batch{}); got != 0 {
		t.Errorf("empty step = %d", got)
	}
	if got := r.StepTime(nil); got != 0 {
		t.Errorf("nil step = %d", got)
	}
	// Garbage input is clamped, never a panic.
	_ = r.StepTime(&Batch{PrefillTokens: -5, NumDecode: -3, DecodeKVSum: -100})
	prev := int64(0)
	for _, n := range []int{1, 2, 8, 64, 256} {
		got := r.StepTime(&Batch{NumDecode: n, DecodeKVSum: int64(n) * 2000, DecodeKVMax: 2000, DecodeKVMin: 2000})
		if got <= prev {
			t.Errorf("decode of %d requests: %d ns, not above %d", n, got, prev)
		}
		prev = got
	}
	prev = 0
	for _, pc := range []int{16, 128, 512, 2048} {
		got := r.StepTime(&Batch{PrefillTokens: pc, PrefillSeqs: 1})
		if got <= prev {
			t.Errorf("prefill of %d tokens: %d ns, not above %d", pc, got, prev)
		}
		prev = got
	}
}

func TestRooflineShardingHalvesWork(t *testing.T) {
	r1, _ := NewRoofline(tinyModel, tinyHW, DefaultEfficiency, 1)
	r2, _ := NewRoofline(tinyModel, tinyHW, DefaultEfficiency, 2)
	b := Batch{PrefillTokens: 2048, PrefillSeqs: 1}
	for _, op := range []string{OpQKVProj, OpOProj, OpGateUpProj, OpDownProj, OpAttention} {
		t1, t2 := r1.OpNs(op, &b), r2.OpNs(op, &b)
		if !(t2 < 0.75*t1) {
			t.Errorf("%s: tp2 %.0f ns is not well below tp1 %.0f ns", op, t2, t1)
		}
	}
	// layernorm is not sharded.
	if a, c := r1.OpNs(OpLayernorm, &b), r2.OpNs(OpLayernorm, &b); a != c {
		t.Errorf("layernorm tp1 %.0f != tp2 %.0f", a, c)
	}
}

func TestRooflineAllocationFree(t *testing.T) {
	r, _ := NewRoofline(tinyModel, tinyHW, Efficiency{AttnUnits: 100, AttnSkew: 0.1, AttnDecodeSkew: 0.03}, 1)
	p := WithCollectives(r, TPComm{TP: 2, Layers: 2, Hidden: 1024, Vocab: 32000, LinkBW: 50e9, LinkLatencyNs: 2000})
	batches := []Batch{
		{PrefillTokens: 500, PrefillKV: 1000, PrefillSeqs: 2, NumDecode: 30, DecodeKVSum: 30000, DecodeKVMax: 2000, DecodeKVMin: 10},
		{NumDecode: 3, DecodeKVSum: 30000, DecodeKVMax: 10000, DecodeKVMin: 10000},
	}
	allocs := testing.AllocsPerRun(100, func() {
		for i := range batches {
			_ = p.StepTime(&batches[i])
		}
	})
	if allocs != 0 {
		t.Errorf("StepTime allocates %.1f times", allocs)
	}
}

func TestNewRooflineErrors(t *testing.T) {
	bad := func(f func(*RooflineModel)) RooflineModel {
		m := tinyModel
		f(&m)
		return m
	}
	for _, c := range []struct {
		name string
		m    RooflineModel
		hw   RooflineHW
		eff  Efficiency
		tp   int
		want string
	}{
		{"tp0", tinyModel, tinyHW, Efficiency{}, 0, "tensor-parallel"},
		{"no layers", bad(func(m *RooflineModel) { m.Layers = 0 }), tinyHW, Efficiency{}, 1, "layers"},
		{"heads vs kv", bad(func(m *RooflineModel) { m.KVHeads = 3 }), tinyHW, Efficiency{}, 1, "multiple of kv heads"},
		{"heads vs tp", tinyModel, tinyHW, Efficiency{}, 3, "not divisible by tp"},
		{"dense without mlp", bad(func(m *RooflineModel) { m.Intermediate = 0 }), tinyHW, Efficiency{}, 1, "intermediate"},
		{"topk", bad(func(m *RooflineModel) { m.Experts, m.ExpertsPerTok = 8, 9 }), tinyHW, Efficiency{}, 1, "experts per token"},
		{"no bandwidth", tinyModel, RooflineHW{PeakFLOPS: 1}, Efficiency{}, 1, "bandwidth"},
		{"bad efficiency", tinyModel, tinyHW, Efficiency{Compute: -1}, 1, "compute"},
		{"bad scale", tinyModel, tinyHW, Efficiency{OpScale: map[string]float64{"act_fn": 0}}, 1, "op_scale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewRoofline(c.m, c.hw, c.eff, c.tp)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestSplitsHeuristic(t *testing.T) {
	r, _ := NewRoofline(tinyModel, tinyHW, Efficiency{AttnUnits: 188}, 1)
	for _, c := range []struct {
		units, blocks, want float64
	}{
		{1024, 128, 1}, // already >= 80 % of 376 slots
		{8, 128, 43},   // 40 splits reach 85 % of a wave, but only 43 changes the blocks per split (ceil(128/s))
		{8, 4, 4},      // at most one split per KV block
	} {
		if got := r.splits(c.units, c.blocks); got != c.want {
			t.Errorf("splits(%g units, %g blocks) = %g, want %g", c.units, c.blocks, got, c.want)
		}
	}
}

func TestSchedule(t *testing.T) {
	eff := tinyEff
	eff.AttnUnits, eff.AttnUnitNs = 10, 1
	r, _ := NewRoofline(tinyModel, tinyHW, eff, 1)
	u := func(l float64) float64 { return r.attnUnitNsPerKV*l + 1 } // one unit of l positions
	for _, tc := range []struct {
		name           string
		n1, l1, n2, l2 float64
		want           float64
	}{
		{"one full wave", 10, 100, 0, 0, u(100)},
		{"two waves", 11, 100, 0, 0, 2 * u(100)},
		{"short units fill idle slots", 5, 100, 5, 50, u(100)},
		// 5 idle slots for u(100) hold 10 units of u(50); 5 more short units
		// need one wave of their own.
		{"then waves of their own", 5, 100, 15, 50, u(100) + u(50)},
		{"longest unit bounds", 10, 50, 1, 1000, u(1000)},
	} {
		nearNs(t, tc.name, r.schedule(tc.n1, tc.l1, tc.n2, tc.l2, r.eff.AttnUnitNs), tc.want)
	}
}

// TestRooflineSkew checks the skew correction of attention: a batch of
// skewed decode contexts costs AttnSkew (AttnDecodeSkew for pure decode) of
// the way from the uniform batch at the mean context to the uniform batch at
// the longest one, and uniform batches are unaffected.
func TestRooflineSkew(t *testing.T) {
	eff := tinyEff
	eff.AttnUnits = 16
	plain, _ := NewRoofline(tinyModel, tinyHW, eff, 1)
	eff.AttnSkew, eff.AttnDecodeSkew = 0.2, 0.05
	r, err := NewRoofline(tinyModel, tinyHW, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		b     Batch
		alpha float64
	}{
		{"decode", Batch{NumDecode: 40, DecodeKVSum: 40 * 1000, DecodeKVMax: 3000, DecodeKVMin: 100}, 0.05},
		{"mixed", Batch{PrefillTokens: 300, PrefillSeqs: 1, NumDecode: 40, DecodeKVSum: 40 * 1000, DecodeKVMax: 3000, DecodeKVMin: 100}, 0.2},
	} {
		uni, top := c.b, c.b
		uni.DecodeKVMax, uni.DecodeKVMin = 1000, 1000
		top.DecodeKVSum, top.DecodeKVMax, top.DecodeKVMin = 40*3000, 3000, 3000
		tMean, tMax := plain.OpNs(OpAttention, &uni), plain.OpNs(OpAttention, &top)
		if !(tMax > tMean) {
			t.Fatalf("%s: t(max) %.0f <= t(mean) %.0f", c.name, tMax, tMean)
		}
		nearNs(t, c.name+" skewed", r.OpNs(OpAttention, &c.b), tMean+c.alpha*(tMax-tMean))
		nearNs(t, c.name+" uniform", r.OpNs(OpAttention, &uni), tMean)
		nearNs(t, c.name+" without skew", plain.OpNs(OpAttention, &c.b), tMean)
	}
	one := Batch{NumDecode: 1, DecodeKVSum: 1000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	nearNs(t, "single decode", r.OpNs(OpAttention, &one), plain.OpNs(OpAttention, &one))
}

// BenchmarkRooflineStepTime times a step of the dense tiny model over a
// spread of batch shapes (the op cache warm after the first pass).
func BenchmarkRooflineStepTime(b *testing.B) {
	r, err := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	if err != nil {
		b.Fatal(err)
	}
	batches := benchBatches()
	var sink int64
	for i := 0; b.Loop(); i++ {
		sink += r.StepTime(&batches[i%len(batches)])
	}
	_ = sink
}

// TestRooflinePackedGQAByHand checks the attention of a kernel that packs
// the query heads of one KV head into the same units in every step
// (FlashAttention 3 on Hopper): tinyModel has 8 query heads over 2 KV heads
// (G = 4), tiles of 64 rows, no wave model.
func TestRooflinePackedGQAByHand(t *testing.T) {
	packed := tinyHW
	packed.PackGQA = true
	for _, c := range []struct {
		name string
		b    Batch
		want float64 // ns
	}{
		// Prefill of 128 tokens: 128*4 = 512 rows per KV head, 8 tiles of
		// 16 tokens; tile i attends to 16(i+1) positions: 576 per KV head,
		// 2 KV heads -> 16 units, 1152 positions -> 1152*0.65536 + 1600.
		// Every unit reads its KV head once: requested = distinct = 128*1024
		// B, no re-reads; q/o/new KV 128*5120 -> (131072 + 655360) / 5e11.
		{"prefill", Batch{PrefillTokens: 128, PrefillSeqs: 1}, 3000 + 1152*0.65536 + 1600 + 1572.864},
		// Mixed: a 64-token chunk (4 tiles per KV head, 16+32+48+64 = 160
		// positions, 8 units) and 2 decodes of 1000 tokens (one unit per
		// request and KV head: 4 units of 1000), plus 2*2*(4-1) = 12 empty
		// units at 10 ns -> 4320*0.65536 + 12*100 + 120. Memory: (64 +
		// 2000)*1024 distinct KV bytes read once, q/o/new KV 66*5120 ->
		// 2451456 / 5e11.
		{"mixed", Batch{PrefillTokens: 64, PrefillSeqs: 1, NumDecode: 2, DecodeKVSum: 2000, DecodeKVMax: 1000, DecodeKVMin: 1000},
			3000 + 4320*0.65536 + 1200 + 120 + 4902.912},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewRoofline(tinyModel, packed, tinyEff, 1)
			if err != nil {
				t.Fatal(err)
			}
			nearNs(t, c.name, r.OpNs(OpAttention, &c.b), c.want)
		})
	}
	// Pure decode is packed with either kernel, and a model without GQA
	// has nothing to pack: both give the same times.
	mha := tinyModel
	mha.KVHeads = mha.Heads
	for _, c := range []struct {
		name string
		m    RooflineModel
		b    Batch
	}{
		{"decode", tinyModel, Batch{NumDecode: 4, DecodeKVSum: 4000, DecodeKVMax: 1000, DecodeKVMin: 1000}},
		{"mha prefill", mha, Batch{PrefillTokens: 300, PrefillSeqs: 2, PrefillKV: 100}},
		{"mha mixed", mha, Batch{PrefillTokens: 64, PrefillSeqs: 1, NumDecode: 5, DecodeKVSum: 5000, DecodeKVMax: 3000, DecodeKVMin: 10}},
	} {
		a, err := NewRoofline(c.m, tinyHW, tinyEff, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewRoofline(c.m, packed, tinyEff, 1)
		if err != nil {
			t.Fatal(err)
		}
		nearNs(t, c.name, p.OpNs(OpAttention, &c.b), a.OpNs(OpAttention, &c.b))
	}
}

// TestRooflinePadsDenseOnly: a CUDA graph padded from 5 decodes to 8 rows
// runs the token-wise ops (the MoE block included) on 8 rows; attention,
// lm_head and the sampler stay at the 5 real requests (padding rows have
// no context and no logits), as the profile predictor prices them.
func TestRooflinePadsDenseOnly(t *testing.T) {
	r, err := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{NumDecode: 5, DecodeKVSum: 5000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	pb := b
	pb.PadTokens = 3
	// qkv_proj at 8 rows: FLOPs 2*8*1024*1536 = 25165824 at 5e13 ->
	// 503.31648 ns; bytes (1024*1536 + 8*1024 + 8*1536)*2 = 3186688 at
	// 5e11 -> 6373.376 ns.
	nearNs(t, "padded qkv_proj", r.OpNs(OpQKVProj, &pb), 1000+503.31648+6373.376)
	// layernorm at 8 rows: 4*8*1024*2 = 65536 bytes -> 131.072 ns.
	nearNs(t, "padded layernorm", r.OpNs(OpLayernorm, &pb), 1000+131.072)
	// lm_head at the 5 real rows: FLOPs 2*5*1024*32000 = 327680000 ->
	// 6553.6 ns; bytes (32768000 + 5*1024 + 5*32000)*2 = 65866240 ->
	// 131732.48 ns.
	nearNs(t, "padded lm_head", r.OpNs(OpLMHead, &pb), 1000+6553.6+131732.48)
	// Attention of 5 requests of 1000 tokens: 10 units x (1000 x 0.65536
	// + 100) = 7553.6 ns; 5000 x 1024 + 5 x 5120 = 5145600 B -> 10291.2 ns.
	nearNs(t, "padded attention", r.OpNs(OpAttention, &pb), 2000+7553.6+10291.2)
	nearNs(t, "padded sampler", r.OpNs(OpSampler, &pb), r.OpNs(OpSampler, &b))

	// The step adds exactly the token-wise ops' difference between 8 and
	// 5 rows, with their multiplicities.
	eight := Batch{NumDecode: 8, DecodeKVSum: 8000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	var extra float64
	for _, u := range r.Ops() {
		switch u.Op {
		case OpAttention, OpLMHead, OpSampler:
		default:
			extra += u.Count * (r.OpNs(u.Op, &eight) - r.OpNs(u.Op, &b))
		}
	}
	if extra <= 0 {
		t.Fatalf("no token-wise ops in the step: %v", r.Ops())
	}
	got, want := float64(r.StepTime(&pb)), float64(r.StepTime(&b))+extra
	if math.Abs(got-want) > 1 {
		t.Errorf("padded step %.0f ns, want %.0f (unpadded + %.1f)", got, want, extra)
	}
	if pb.PadTokens != 3 {
		t.Errorf("StepTime changed PadTokens to %d", pb.PadTokens)
	}

	// The MoE block runs inside the graph too (vLLM's default piecewise
	// splitting ops are the attention ops only): it is read at the 8
	// padded rows, like the profile's moe.csv. 8 tokens, top-2 of 8
	// experts: round(8·(1−0.75^8)) = 7 activated. FLOPs 2·8·1024·8 (router)
	// + 2·8·2·1024·3·512 = 50462720 at 5e13 -> 1009.2544 ns; bytes
	// (7·3·1024·512 + 1024·8 + 2·8·2·1024 + 8·2·3·512)·2 = 22151168 at
	// 5e11 -> 44302.336 ns; plus 4 launches. At the 5 real rows it would be
	// 6 experts, 4000 + 630.784 + 37924.864 = 42555.648 ns.
	m := tinyModel
	m.Intermediate, m.Experts, m.ExpertsPerTok, m.MoEIntermediate = 0, 8, 2, 512
	rm, err := NewRoofline(m, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	nearNs(t, "padded moe", rm.OpNs(OpMoE, &pb), 4000+1009.2544+44302.336)
	nearNs(t, "unpadded moe", rm.OpNs(OpMoE, &b), 4000+630.784+37924.864)
	if a, c := rm.StepTime(&pb), rm.StepTime(&b); a <= c {
		t.Errorf("MoE model: padded step %d ns not above unpadded %d", a, c)
	}
}

// TestRooflineUnderEngineTimePads: WithEngineTime pads 5 decodes to the
// capture size 8 (16 when a data-parallel peer has 13 tokens), and the
// roofline beneath it prices the dense ops at the padded count.
func TestRooflineUnderEngineTimePads(t *testing.T) {
	r, err := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := EngineTime{Mode: GraphsFullAndPiecewise, CaptureSizes: DefaultCaptureSizes(128, 2048), Async: true}
	b := Batch{NumDecode: 5, DecodeKVSum: 5000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	pb := b
	pb.PadTokens = 3
	if got, want := WithEngineTime(r, e).StepTime(&b), r.StepTime(&pb); got != want || got <= r.StepTime(&b) {
		t.Errorf("graph step %d ns, want the padded roofline's %d (unpadded %d)", got, want, r.StepTime(&b))
	}
	// A data-parallel rank in lockstep pads to the group's count: 5
	// decodes padded to a peer's 13 tokens run as the capture size 16.
	dp := b
	dp.DPPadTo, dp.DPSynced, dp.DPMode = 13, true, RunFull
	pad11 := b
	pad11.PadTokens = 11
	if got, want := WithEngineTime(r, e).StepTime(&dp), r.StepTime(&pad11); got != want || got <= r.StepTime(&pb) {
		t.Errorf("DP-padded step %d ns, want the roofline at 16 rows, %d", got, want)
	}
	e.Mode = GraphsNone
	if got, want := WithEngineTime(r, e).StepTime(&b), r.StepTime(&b); got != want {
		t.Errorf("eager step %d ns, want the unpadded roofline's %d", got, want)
	}
}

// TestRooflineSwappedGQADecodeCopy: with FlashAttention 2's swapped-GQA
// decode, a pure-decode step of two or more requests on two or more KV
// heads per GPU costs AttnDecodeCopyNs more than the same step without
// the swap (the query transpose is a copy); one request, one KV head, no
// GQA, speculative rows, a prefill in the step, or hardware without the
// swap cost nothing more.
func TestRooflineSwappedGQADecodeCopy(t *testing.T) {
	swapped := tinyHW
	swapped.SwapGQADecode = true
	eff := tinyEff
	eff.AttnDecodeCopyNs = 4000
	mqa, mha := tinyModel, tinyModel
	mqa.KVHeads, mha.KVHeads = 1, mha.Heads
	decodes := func(n int) Batch {
		return Batch{NumDecode: n, DecodeKVSum: int64(n) * 1000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	}
	spec := decodes(4)
	spec.SpecTokens = 4
	mixed := decodes(4)
	mixed.PrefillTokens, mixed.PrefillSeqs = 64, 1
	for _, c := range []struct {
		name string
		m    RooflineModel
		hw   RooflineHW
		b    Batch
		more float64 // ns over the same step on tinyHW
	}{
		{"4 decodes, 2 KV heads", tinyModel, swapped, decodes(4), 4000},
		{"2 decodes, 2 KV heads", tinyModel, swapped, decodes(2), 4000},
		{"1 decode: a view", tinyModel, swapped, decodes(1), 0},
		{"1 KV head: a view", mqa, swapped, decodes(4), 0},
		{"no GQA: not swapped", mha, swapped, decodes(4), 0},
		{"speculative rows: not swapped", tinyModel, swapped, spec, 0},
		{"mixed step: one varlen launch", tinyModel, swapped, mixed, 0},
		{"no swap on this hardware", tinyModel, tinyHW, decodes(4), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, err := NewRoofline(c.m, tinyHW, eff, 1)
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewRoofline(c.m, c.hw, eff, 1)
			if err != nil {
				t.Fatal(err)
			}
			nearNs(t, c.name, r.OpNs(OpAttention, &c.b)-base.OpNs(OpAttention, &c.b), c.more)
		})
	}
}

// TestRooflineSMWave checks the wave of the accelerator's own SM count:
// SMs × AttnUnitsPerSM units, and a launch never shorter than its longest
// work unit. One prefill of 640 tokens on tinyModel's 8 query heads with
// 64-row tiles is 10 tiles per head, 80 units; tile i attends to 64(i+1)
// positions, 352 on average, 640 for the last. With 100 SMs and one CTA
// per SM every unit runs at AttnCompute·PeakFLOPS/100 = 5e11 FLOP/s, so a
// KV position of a unit (4·64·128 FLOPs) takes 65.536 ns. A fitted
// 100-unit wave times the one wave by its mean unit, 65.536·352 + 100 ns;
// the SM wave by its longest, 65.536·640 + 100 ns: 18,874.368 ns more
// (the rest of the attention time, with sharpness 1 a plain sum, is the
// same).
func TestRooflineSMWave(t *testing.T) {
	b := Batch{PrefillTokens: 640, PrefillSeqs: 1}
	fitted := tinyEff
	fitted.AttnUnits = 100
	hw := tinyHW
	hw.SMs = 100
	sm := tinyEff
	sm.AttnUnits, sm.AttnUnitsPerSM = 7, 1 // AttnUnits is replaced
	rFit, err := NewRoofline(tinyModel, hw, fitted, 1)
	if err != nil {
		t.Fatal(err)
	}
	rSM, err := NewRoofline(tinyModel, hw, sm, 1)
	if err != nil {
		t.Fatal(err)
	}
	nearNs(t, "longest unit over the mean", rSM.OpNs(OpAttention, &b)-rFit.OpNs(OpAttention, &b), 65.536*(640-352))
	// Two CTAs per SM: 200 slots, each unit at half the rate (131.072 ns
	// per position), against a fitted 200-unit wave.
	sm.AttnUnitsPerSM = 2
	fitted.AttnUnits = 200
	r2, _ := NewRoofline(tinyModel, hw, sm, 1)
	rFit2, _ := NewRoofline(tinyModel, hw, fitted, 1)
	nearNs(t, "two CTAs per SM", r2.OpNs(OpAttention, &b)-rFit2.OpNs(OpAttention, &b), 131.072*(640-352))
	// Without an SM count the per-SM occupancy does nothing.
	r0, _ := NewRoofline(tinyModel, tinyHW, sm, 1)
	plain := tinyEff
	plain.AttnUnits = 7
	rp, _ := NewRoofline(tinyModel, tinyHW, plain, 1)
	nearNs(t, "no SM count", r0.OpNs(OpAttention, &b), rp.OpNs(OpAttention, &b))
	if err := (Efficiency{AttnUnitsPerSM: -1}).Validate(); err == nil {
		t.Error("negative attn_units_per_sm accepted")
	}
}
