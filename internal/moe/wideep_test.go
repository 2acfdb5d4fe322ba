package moe

import (
	"math"
	"testing"
)

// v3Fabric is DeepSeek-V3's MoE (hidden 7168, top-8 of 256 experts, block
// FP8 dispatch of 7168 + 56·4 = 7392 B, BF16 combine of 14,336 B) on H200
// nodes of 8 (NVLink 450 GB/s, NIC 400 Gb/s = 50 GB/s a GPU).
func v3Fabric(ep int, lowLatency bool) DeepEP {
	return DeepEP{Fabric: Fabric{EP: ep, NodeRanks: min(ep, 8), NVLinkBW: 450e9, NICBW: 50e9}, LowLatency: lowLatency,
		DP: ep, TopK: 8, Experts: 256, DispatchBytes: 7392, CombineBytes: 14336}
}

// TestDeepEPDecodeStepByHand: the all-to-all of one decode step of
// DeepSeek-V3 with 128 tokens a rank under deepep_low_latency, computed by
// hand, at EP 16 (2 nodes) and EP 64 (8 nodes); the step has 58 MoE layers.
//
// EP 16: 1024 pairs a rank. Dispatch 1024·7392 = 7,569,408 B, half of it to
// the other node: 3,784,704 B / 50 GB/s = 75,694.08 ns (its NVLink half,
// 7/16 of the bytes at 0.6·450 GB/s = 12,266.5 ns, hides under it), plus
// 42,000 ns = 117,694.08. Combine 1024·14,336 = 14,680,064 B, half: 146,800.64
// + 48,000 = 194,800.64. Layer 312,494.72 -> 312,495 ns; step 58 x = 18,124,710 ns.
// DeepEP's README, EP 16: 118 + 195 = 313 us (the fixed costs come from
// this row).
//
// EP 64: 7/8 of the bytes leave the node: dispatch 132,464.64 + 42,000,
// combine 256,901.12 + 48,000; layer 479,365.76 -> 479,366 ns; step
// 27,803,228 ns. DeepEP's README, EP 64: 173 + 314 = 487 us (-1.6 %).
func TestDeepEPDecodeStepByHand(t *testing.T) {
	for _, c := range []struct {
		ep         int
		layer      int64
		readmeUs   float64
		step       int64
		tolPercent float64
	}{
		{16, 312_495, 313, 18_124_710, 0.5},
		{64, 479_366, 487, 27_803_228, 2},
	} {
		d := v3Fabric(c.ep, true)
		got := d.LayerNs(128*c.ep, 0)
		if got != c.layer {
			t.Errorf("EP %d: layer %d ns, want %d", c.ep, got, c.layer)
		}
		if step := 58 * got; step != c.step {
			t.Errorf("EP %d: step %d ns, want %d", c.ep, step, c.step)
		}
		if diff := 100 * math.Abs(float64(got)/1e3-c.readmeUs) / c.readmeUs; diff > c.tolPercent {
			t.Errorf("EP %d: %.1f us vs DeepEP's %.0f us: %.1f %% off", c.ep, float64(got)/1e3, c.readmeUs, diff)
		}
		// A hotter receiver than the senders moves more.
		if hot := d.LayerNs(128*c.ep, 2*1024); hot <= got {
			t.Errorf("EP %d: a rank receiving twice the pairs takes %d ns, not more than %d", c.ep, hot, got)
		}
	}
	// Inside one node (EP 8) only NVLink: dispatch 7/8·7,569,408 =
	// 6,623,232 B at 270 GB/s = 24,530.49 ns + 12,000; combine
	// 7/8·14,680,064 = 12,845,056 B, 47,574.28 + 12,000; layer 96,104.77 ->
	// 96,105 ns. AIConfigurator's H200 table (one node): 35.1 + 67.7 =
	// 102.8 us.
	if got := v3Fabric(8, true).LayerNs(1024, 0); got != 96_105 {
		t.Errorf("EP 8: layer %d ns, want 96105", got)
	}
}

// TestDeepEPHighThroughputByHand: the normal kernels send a token once per
// remote node. DeepSeek-V3 at EP 16 (2 nodes of 128 experts), 4096 tokens
// a rank: a token reaches the other node unless all 8 experts are local,
// 1 − C(128,8)/C(256,8); the NVLink forwarding reaches the other 15 ranks'
// share 1 − C(240,8)/C(256,8) of the time, 7/8 of it forwarded.
func TestDeepEPHighThroughputByHand(t *testing.T) {
	missNode, missRank := 1.0, 1.0
	for i := 0; i < 8; i++ {
		missNode *= float64(128-i) / float64(256-i)
		missRank *= float64(240-i) / float64(256-i)
	}
	phase := func(b, fixed, inter float64) float64 {
		rdma := 4096 * (1 - missNode) * b / 50e9 * 1e9
		nvl := 4096 * 15 * (1 - missRank) * 7 / 8 * b / 270e9 * 1e9
		return fixed + inter + math.Max(rdma, nvl)
	}
	want := phase(7392, 27_000, 30_000) + phase(14336, 47_000, 36_000)
	if got := v3Fabric(16, false).LayerNs(4096*16, 0); math.Abs(float64(got)-want) > 1 {
		t.Errorf("EP 16 normal: %d ns, want %.0f", got, want)
	}
	if missNode < 0.00348 || missNode > 0.00350 {
		t.Errorf("C(128,8)/C(256,8) = %g, want about 0.00349", missNode)
	}
}

// zipf15 is a Zipf popularity of exponent 1.5 over 8 experts, in rank
// order: 1, 0.35355, 0.19245, 0.125, 0.08944, 0.06804, 0.05399, 0.04419
// (sum 1.92666).
func zipf15() []float64 {
	w := make([]float64, 8)
	for i := range w {
		w[i] = math.Pow(float64(i+1), -1.5)
	}
	return w
}

type flatTimer struct{}

func (flatTimer) MoELayerNs(tokens, _ float64) float64 { return tokens }

// TestEPLBHottestRankByHand: 8 experts of Zipf(1.5) popularity on 4 EP
// ranks, the hottest rank's expected share of the routed pairs (ideal
// 0.25), by hand:
//
//   - linear placement, no redundancy (2 experts a rank): rank 0 holds
//     experts 0 and 1, 1.35355/1.92666 = 0.70253;
//   - EPLB without redundancy: packing heaviest first onto the least
//     loaded rank with a free slot leaves expert 0 with expert 7:
//     1.04419/1.92666 = 0.54197;
//   - 4 redundant experts (3 slots a rank), before the first rebalance:
//     physical i is logical i mod 8, so rank 0 holds halves of experts 0,
//     1, 2: 0.77300/1.92666 = 0.40121;
//   - after the rebalance: copies go to expert 0 (to 2, then 3 copies),
//     expert 1 (2 copies), expert 0 (4 copies); packing gives rank 1
//     0.25 + 0.17678 + 0.06804 = 0.49482/1.92666 = 0.25683.
func TestEPLBHottestRankByHand(t *testing.T) {
	hottest := func(m *Model, balanced bool) float64 {
		h := 0.0
		for r := 0; r < 4; r++ {
			s := m.Share(0, r)
			if balanced {
				s = m.BalancedShare(0, r)
			}
			h = max(h, s)
		}
		return h
	}
	for _, c := range []struct {
		redundant      int
		before, after  float64
		activeAfterBal bool
	}{
		{0, 0.70253, 0.54197, true},
		{4, 0.40121, 0.25683, true},
	} {
		m, err := New(Config{Layers: 1, Experts: 8, TopK: 2, EP: 4, Routing: Routing{Weights: zipf15()}, Timer: flatTimer{},
			EPLB: &EPLB{Redundant: c.redundant, StepInterval: 3}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := hottest(m, false); math.Abs(got-c.before) > 5e-5 {
			t.Errorf("R %d: hottest rank before the rebalance %.5f, want %.5f", c.redundant, got, c.before)
		}
		if got := hottest(m, true); math.Abs(got-c.after) > 5e-5 {
			t.Errorf("R %d: hottest rank after the rebalance %.5f, want %.5f", c.redundant, got, c.after)
		}
		// The rebalance takes effect after StepInterval steps, and the
		// busiest rank's draws shrink with it.
		before := 0.0
		for i := 0; i < 3; i++ {
			if m.Rebalanced() {
				t.Fatalf("R %d: rebalanced after %d steps of 3", c.redundant, i)
			}
			before += float64(m.StepNs(100_000))
		}
		if !m.Rebalanced() {
			t.Fatalf("R %d: not rebalanced after 3 steps", c.redundant)
		}
		after := 0.0
		for i := 0; i < 3; i++ {
			after += float64(m.StepNs(100_000))
		}
		// flatTimer: layer time = busiest·ep/k tokens = 2·busiest.
		if want := 3 * 2 * 200_000 * c.after; math.Abs(after-want)/want > 0.01 {
			t.Errorf("R %d: 3 steps after the rebalance %.0f ns, want about %.0f", c.redundant, after, want)
		}
		if want := 3 * 2 * 200_000 * c.before; math.Abs(before-want)/want > 0.01 {
			t.Errorf("R %d: 3 steps before the rebalance %.0f ns, want about %.0f", c.redundant, before, want)
		}
	}
	if _, err := New(Config{Layers: 1, Experts: 8, TopK: 2, EP: 4, Timer: flatTimer{}, EPLB: &EPLB{Redundant: 2, StepInterval: 1}}, 1); err == nil {
		t.Error("10 physical experts on 4 ranks accepted")
	}
}

// TestTwoBatchByHand: two micro-batches through 2 layers.
//
// Compute-bound (comp 3, comm 2): u0 computes 0-3 and sends 3-5; u1
// computes 3-6, sends 6-8; layer 2: u0 6-9, 9-11; u1 9-12, 12-14: 14.
// Communication-bound (comp 1, comm 3): the communication stream is busy
// from 1 on: 1 + 4·3 = 13.
func TestTwoBatchByHand(t *testing.T) {
	if got := TwoBatchNs(2, 3, 2); got != 14 {
		t.Errorf("compute-bound: %g, want 14", got)
	}
	if got := TwoBatchNs(2, 1, 3); got != 13 {
		t.Errorf("communication-bound: %g, want 13", got)
	}
}

// TestDBOStepByHand: a 30 ms decode step of DeepSeek-V3 at EP 16, 128
// tokens a rank, under deepep_low_latency. A micro-batch of 64 tokens a
// rank communicates 79,847.04 + 121,400.32 = 201,247 ns a layer (the
// fixed costs do not halve).
//
// If one micro-batch alone takes 20 ms, its compute is (20,000,000 − 58 ×
// 201,247)/58 = 143,580.59 ns a layer: communication-bound, so the step is
// 143,580.59 + 2·58·201,247 = 23,488,233 ns, faster than 30 ms. If it
// takes 40 ms (a memory-bound decode reading its weights again for each
// micro-batch), 488,408.17 ns a layer: compute-bound, 116 × 488,408.17 +
// 201,247 = 56,856,595 ns: the overlap loses.
func TestDBOStepByHand(t *testing.T) {
	m, err := New(Config{Layers: 58, Experts: 256, TopK: 8, EP: 16, Timer: flatTimer{}, Dispatch: v3Fabric(16, true)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Overlapped(30_000_000, 20_000_000, 2048); got != 23_488_233 {
		t.Errorf("communication-bound step %d ns, want 23488233", got)
	}
	if got := m.Overlapped(30_000_000, 40_000_000, 2048); got != 56_856_595 {
		t.Errorf("compute-bound step %d ns, want 56856595", got)
	}
	if got := m.Overlapped(30_000_000, 20_000_000, 1); got != 30_000_000 {
		t.Errorf("one token: %d, want the step unchanged", got)
	}
	// One micro-batch's MoE: 58 x 201,247 of all-to-all, and no expert
	// time: no step has drawn a load yet (flatTimer at 0 tokens).
	if got := m.HalfMoENs(2048); got != 58*201_247 {
		t.Errorf("half MoE %d ns, want %d", got, 58*201_247)
	}
	// After a step the experts' time is the flatTimer at the busiest
	// half-load's tokens: positive.
	m.StepNs(2048)
	if got := m.HalfMoENs(2048); got <= 58*201_247 {
		t.Errorf("half MoE after a step %d ns, want more than %d", got, 58*201_247)
	}
}

// TestBalancedLayerByHand: one MoE layer at 2048 gathered tokens over EP
// 16 under a balanced load: the busiest rank receives 2048·8/16 = 1024
// pairs, the timer runs at 1024·16/8 = 2048 tokens (flatTimer: 2048 ns),
// and the low-latency all-to-all of 128 tokens a rank is 312,495 ns
// (TestDeepEPDecodeStepByHand): 314,543 ns. No load is drawn.
func TestBalancedLayerByHand(t *testing.T) {
	m, err := New(Config{Layers: 58, Experts: 256, TopK: 8, EP: 16, Timer: flatTimer{}, Dispatch: v3Fabric(16, true)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if got := m.BalancedLayerNs(2048); got != 314_543 {
			t.Errorf("call %d: %d ns, want 314543", i, got)
		}
	}
	if m.steps != 0 {
		t.Errorf("BalancedLayerNs counted %d steps", m.steps)
	}
}

// TestLowLatencyChunksByHand: vLLM runs a layer of more than 256 tokens a
// rank through the low-latency kernels in chunks of 256 (VLLM_MOE_DP_CHUNK_SIZE),
// each with its fixed costs. DeepSeek-V3 at EP 16 with 1,024 tokens a rank
// (16,384 gathered), balanced:
//
//   - in one piece: dispatch 8,192 pairs x 7,392 B, half across, at 50 GB/s
//     = 605,552.64 + 42,000; combine 1,174,405.12 + 48,000; 1,869,958 ns,
//     plus the flatTimer at 16,384 tokens: 1,886,342 ns;
//   - in 4 chunks of 256: each 151,388.16 + 42,000 + 293,601.28 + 48,000 =
//     534,989 ns plus the flatTimer at 4,096 tokens, 539,085; x 4 =
//     2,156,340 ns.
func TestLowLatencyChunksByHand(t *testing.T) {
	for _, c := range []struct {
		chunk int
		want  int64
	}{{0, 1_886_342}, {VLLMMoEDPChunkSize, 2_156_340}} {
		m, err := New(Config{Layers: 58, Experts: 256, TopK: 8, EP: 16, Timer: flatTimer{}, Dispatch: v3Fabric(16, true),
			ChunkTokens: c.chunk, DP: 16}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.BalancedLayerNs(16384); got != c.want {
			t.Errorf("chunk %d: %d ns, want %d", c.chunk, got, c.want)
		}
	}
}
