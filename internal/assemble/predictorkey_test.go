package assemble

import (
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/perf"
)

// groupPredictors resolves the groups of scenario y and returns each
// one's predictor key and predictor, after edit (if any) changes the
// second group's resolved shape.
func groupPredictors(t *testing.T, y string, edit func(*groupShape)) ([2]predictorKey, [2]perf.Predictor) {
	t.Helper()
	s, err := config.Parse([]byte(y), "keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := resolveInputs(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	bl := newBuilder(in)
	var keys [2]predictorKey
	var preds [2]perf.Predictor
	for gi := range 2 {
		gs, err := bl.resolveGroup(gi)
		if err != nil {
			t.Fatal(err)
		}
		if gi == 1 && edit != nil {
			edit(gs)
		}
		if keys[gi], preds[gi], err = bl.groupPredictor(gs); err != nil {
			t.Fatal(err)
		}
	}
	return keys, preds
}

var decodeBatch = &perf.Batch{NumDecode: 64, DecodeKVSum: 64 * 1000, DecodeKVMax: 1000, DecodeKVMin: 1000}

// TestPredictorKeyNVLinkDomain: two GB200 groups (4-GPU trays in a
// 72-GPU NVLink domain) that differ only in the NVLink domain get
// different predictors; at tp 8 the one whose domain is the tray alone
// runs its all-reduces over the NICs, so its steps are slower.
func TestPredictorKeyNVLinkDomain(t *testing.T) {
	const y = "hardware: GB200\npredictor: {kind: roofline}\ninstances: [{tp: 8}, {tp: 8}]\n"
	same, samePreds := groupPredictors(t, y, nil)
	if same[0] != same[1] || samePreds[0] != samePreds[1] {
		t.Fatalf("identical groups: keys %+v and %+v, want one shared predictor", same[0], same[1])
	}
	keys, preds := groupPredictors(t, y, func(gs *groupShape) {
		if gs.acc.Node.NVLinkDomain <= gs.acc.Node.GPUs || gs.tp <= gs.acc.Node.GPUs {
			t.Fatalf("GB200 node %+v, tp %d: the test needs tp beyond the tray and inside the domain", gs.acc.Node, gs.tp)
		}
		gs.acc.Node.NVLinkDomain = gs.acc.Node.GPUs
		gs.linkGPUs = gs.acc.Node.LinkDomain()
	})
	if keys[0] == keys[1] || preds[0] == preds[1] {
		t.Fatalf("groups differing in NVLink domain share key %+v", keys[0])
	}
	if a, b := preds[0].StepTime(decodeBatch), preds[1].StepTime(decodeBatch); !(b > a) {
		t.Errorf("tp 8 across 4-GPU trays over the NICs: step %d ns, want more than %d ns inside the NVLink domain", b, a)
	}
}

// TestPredictorKeyCustomAllReduce: two H100 tp 2 groups that differ only
// in engine.disable_custom_all_reduce get predictors of their own, timing
// the all-reduces with NCCL or vLLM's custom kernel.
func TestPredictorKeyCustomAllReduce(t *testing.T) {
	b := mustBuild(t, "ar.yaml", "hardware: H100\npredictor: {kind: roofline}\nworkload: {limit: 5}\n"+
		"instances: [{tp: 2}, {tp: 2, engine: {disable_custom_all_reduce: true}}]\n")
	custom, nccl := b.instances[0].Predictor.StepTime(decodeBatch), b.instances[1].Predictor.StepTime(decodeBatch)
	if custom == nccl {
		t.Errorf("custom all-reduce and NCCL steps both %d ns: the groups share a predictor", custom)
	}
}
