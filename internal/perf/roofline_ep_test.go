package perf

import "testing"

// The roofline's MoE block of one expert-parallel rank, by hand. tinyEff
// has sharpness 1 (time = launches + compute + memory), compute and memory
// at half of 1e14 FLOP/s and 1e12 B/s.
func TestRooflineEPRankByHand(t *testing.T) {
	m := tinyModel
	m.Intermediate, m.Experts, m.ExpertsPerTok, m.MoEIntermediate = 0, 8, 2, 512
	r, err := NewRoofline(m, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := r.EPRank(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// dp 2, ep 2, 100 gathered tokens, 3 of the rank's 4 experts active.
	// Own tokens 50, the rank's routed pairs 100*2/2 = 100, all gathered
	// pairs 200.
	// FLOPs: router 2*50*1024*8 = 819200; experts 2*100*1024*3*512 =
	// 314572800; sum 315392000 at 5e13 -> 6307.84 ns.
	// Elements: weights 3*3*1024*512 = 4718592; router 1024*8 = 8192;
	// activations of every gathered pair 2*200*1024 + 3*200*512 = 716800;
	// 5443584 x 2 B = 10887168 B at 5e11 -> 21774.336 ns. Plus 4 launches
	// of 1000 ns.
	nearNs(t, "ep rank (100 tokens, 3 experts)", ep.MoELayerNs(100, 3), 4000+6307.84+21774.336)
	// More active experts than the rank holds are clamped to its 4.
	nearNs(t, "clamped", ep.MoELayerNs(100, 7), ep.MoELayerNs(100, 4))
	if ep.MoELayerNs(0, 3) != 0 {
		t.Error("no tokens must cost nothing")
	}

	// dp = ep = 1 is the single-rank MoE op at the same coordinates.
	one, err := r.EPRank(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int{{1, 2}, {16, 8}, {100, 8}, {2048, 8}} {
		nearNs(t, "dp=ep=1", one.MoELayerNs(float64(c[0]), float64(c[1])), r.MoENs(c[0], c[1]))
	}

	// A group's MoE time replaces the MoE op (2 layers) in the step.
	b := Batch{NumDecode: 10, DecodeKVSum: 1000}
	plain := r.StepTime(&b)
	b.MoENs = 777_000
	if got, want := r.StepTime(&b), plain-int64(2*r.OpNs(OpMoE, &b)+0.5)+777_000; got < want-1 || got > want+1 {
		t.Errorf("step with MoENs = %d want %d", got, want)
	}
	for _, o := range r.Breakdown(&b, nil) {
		if o.Op == OpMoE && o.Ns*o.Count != 777_000 {
			t.Errorf("breakdown MoE = %v x %v", o.Ns, o.Count)
		}
	}

	// Bad shapes are refused.
	for _, c := range [][2]int{{2, 1}, {2, 3}, {0, 0}} {
		if _, err := r.EPRank(c[0], c[1]); err == nil {
			t.Errorf("EPRank(%d, %d) accepted", c[0], c[1])
		}
	}
	dense, _ := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	if _, err := dense.EPRank(2, 2); err == nil {
		t.Error("EPRank on a dense model accepted")
	}
}
