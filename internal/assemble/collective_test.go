package assemble

import (
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
)

// predictor.collective_scale multiplies the tensor-parallel communication
// of a tp = 2 instance and nothing else: a step's time is linear in the
// scale (equal increments from 1 to 2 and 2 to 3, to the nanosecond's
// rounding), 0 is the modelled time (scale 1), and tp = 1 ignores it.
func TestCollectiveScale(t *testing.T) {
	step := func(tp int, scale float64) int64 {
		t.Helper()
		s, err := config.LoadDefault()
		if err != nil {
			t.Fatal(err)
		}
		*s.Instances[0].TP = tp
		s.Predictor.CollectiveScale = scale
		b, err := Build(s, config.Source{})
		if err != nil {
			t.Fatal(err)
		}
		return b.instances[0].Predictor.StepTime(&perf.Batch{PrefillTokens: 512, PrefillSeqs: 1, NumDecode: 32, DecodeKVSum: 32 * 1000})
	}
	t0, t1, t2, t3 := step(2, 0), step(2, 1), step(2, 2), step(2, 3)
	t.Logf("tp 2 step: %d ns at scale 1, +%d ns per unit of scale", t1, t2-t1)
	if t0 != t1 || t2-t1 <= 0 || abs(t3-t2-(t2-t1)) > 1 {
		t.Errorf("step times %d %d %d %d: want t0 = t1 and equal positive increments", t0, t1, t2, t3)
	}
	if a, b := step(1, 0), step(1, 3); a != b {
		t.Errorf("tp 1: scale changed the step %d -> %d", a, b)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// A tensor-parallel group larger than a node (H100: 8 GPUs) all-reduces
// across nodes: NCCL only, at the NIC-bound rate 0.75 × 50 GB/s =
// 37.5 GB/s with 8 + 2 µs latency; a group inside one node keeps the
// NVLink rate 0.80 × 450 GB/s = 360 GB/s and the custom kernel.
func TestTPCommSpanningNodes(t *testing.T) {
	acc, err := hw.Lookup("H100")
	if err != nil {
		t.Fatal(err)
	}
	m := &model.Config{NumLayers: 80, HiddenSize: 8192, VocabSize: 128256}
	tests := []struct {
		tp      int
		custom  bool
		busBW   float64
		latency int64
	}{
		{8, true, 360e9, 8_000},
		{16, false, 37.5e9, 10_000},
	}
	for _, tt := range tests {
		c := tpComm(m, acc, tt.tp, 2, config.Links{TPLatencyUs: -1}, config.Engine{})
		if c.AR.N != tt.tp || c.AR.Custom != tt.custom || c.AR.BusBW != tt.busBW || c.AR.NCCLLatencyNs != tt.latency {
			t.Errorf("tp %d: all-reduce %+v, want custom %v busbw %g latency %d", tt.tp, c.AR, tt.custom, tt.busBW, tt.latency)
		}
	}
}

// node_gpus sets the node size tpComm sees: a tp 16 group on 16-GPU nodes
// stays inside one (NVLink rate, 0.80 x 450 GB/s), on the catalog's 8-GPU
// nodes it spans two (NIC-bound, 37.5 GB/s). Both groups in one scenario
// get their own predictor.
func TestTPCommNodeGPUs(t *testing.T) {
	b, err := buildYAML(t, "predictor: {kind: roofline}\nhardware: H100\ninstances: [{tp: 16}, {tp: 16, node_gpus: 16}]\n")
	if err != nil {
		t.Fatal(err)
	}
	batch := &perf.Batch{PrefillTokens: 4096, PrefillSeqs: 1}
	spans, inside := b.instances[0].Predictor.StepTime(batch), b.instances[1].Predictor.StepTime(batch)
	if spans <= inside {
		t.Errorf("tp 16 step: %d ns across two 8-GPU nodes, %d ns inside one 16-GPU node; want the first slower", spans, inside)
	}
}

// On GB200 a tp 8 group spans two 4-GPU compute trays but stays inside the
// rack's NVLink domain (NVL72): its all-reduce runs on NVLink, as inside
// one node. B300 (8-GPU nodes, no larger domain) at tp 16 crosses the NICs.
func TestTPCommNVLinkDomain(t *testing.T) {
	gb, err := hw.Lookup("GB200")
	if err != nil {
		t.Fatal(err)
	}
	b3, err := hw.Lookup("B300")
	if err != nil {
		t.Fatal(err)
	}
	m := &model.Config{NumLayers: 80, HiddenSize: 8192, VocabSize: 128256}
	inside := tpComm(m, gb, 8, 2, config.Links{TPLatencyUs: -1}, config.Engine{})
	want := tpComm(m, hw.Accelerator{Name: "one node", Link: gb.Link, Node: hw.Node{GPUs: 8}}, 8, 2, config.Links{TPLatencyUs: -1}, config.Engine{})
	if inside.AR != want.AR {
		t.Errorf("GB200 tp 8 all-reduce %+v, want the in-node one %+v", inside.AR, want.AR)
	}
	across := tpComm(m, b3, 16, 2, config.Links{TPLatencyUs: -1}, config.Engine{})
	if across.AR == tpComm(m, hw.Accelerator{Link: b3.Link, Node: hw.Node{GPUs: 16}}, 16, 2, config.Links{TPLatencyUs: -1}, config.Engine{}).AR {
		t.Errorf("B300 tp 16 all-reduce %+v: want the NIC-spanning one", across.AR)
	}
}

// The calibrated all-reduce constants apply to the accelerator whose
// calibration has them (B200: custom all-reduce latency 7.461 µs in the
// embedded calibration), not to one that borrows its calibration
// (H20 borrows H100's), nor to a group spanning nodes.
func TestCalibratedCommOwnOnly(t *testing.T) {
	s, err := config.Parse([]byte("model: meta-llama/Llama-3.1-8B\nhardware: B200\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(model.Builtin(), "meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		acc    string
		tp     int
		custom int64
	}{{"B200", 8, 7461}, {"H20", 8, perf.CustomARLatencyNVLinkNs}, {"H100", 4, 4514}, {"H100", 16, perf.CustomARLatencyNVLinkNs}} {
		acc, err := hw.Lookup(c.acc)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := calibratedComm(s, config.Source{}, acc, tpComm(m, acc, c.tp, 2, config.Links{TPLatencyUs: -1}, config.Engine{}))
		if err != nil {
			t.Fatal(err)
		}
		if tc.AR.CustomLatencyNs != c.custom {
			t.Errorf("%s tp %d: custom all-reduce latency %d ns, want %d", c.acc, c.tp, tc.AR.CustomLatencyNs, c.custom)
		}
	}
}
