package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/hw"
)

// TestDescribeSaysWhatIsSimulated: the description names the model, each
// group's layout, hardware and KV capacity, the step-latency source, the
// workload and the seed; a roofline on an uncalibrated accelerator warns
// that it borrows another's calibration, and a calibrated one does not.
func TestDescribeSaysWhatIsSimulated(t *testing.T) {
	for _, c := range []struct {
		yaml     string
		want     []string
		warnings int
	}{
		{"seed: 7\ninstances: [{role: prefill, count: 2}, {role: decode, engine: {num_gpu_blocks: 3000}}]\nworkload: {limit: 10}\n",
			[]string{"seed 7", "meta-llama/Llama-3.1-8B (bf16)", "2 x prefill on RTXPRO6000 tp 1", "1 x decode", "3000 KV blocks x 16 tokens",
				"profile RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1", "policy pull", "first 10"}, 0},
		{"predictor: {kind: roofline}\nhardware: RTX4090\ninstances: [{tp: 2}]\n",
			[]string{"RTX4090 tp 2", "borrowed calibration", "RTX4090 is not calibrated: efficiencies borrowed from RTXPRO6000"}, 1},
		{"predictor: {kind: roofline}\nhardware: H100\ninstances: [{tp: 2}]\n",
			[]string{"H100 tp 2", "roofline, H100 calibrated (embedded calibration); fitted on per-op kernel tables perfdb:h100_sxm/vllm/0.19.0; kept from RTXPRO6000: op_scale"}, 0},
		{"predictor: {kind: roofline}\n", []string{"roofline, RTXPRO6000 calibrated (embedded calibration)"}, 0},
		// The Qwen MoE bundle has no tp2/moe.csv: tensor-parallel MoE at
		// tp 2 is the tp1 table halved, and the description says so; with
		// dp 2 x ep 2 the experts are whole and nothing is scaled.
		{"model: Qwen/Qwen3-30B-A3B-Instruct-2507\ninstances: [{tp: 2}]\n",
			[]string{"profile RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16/tp2", "tp1 table divided by tp"}, 1},
		{"model: Qwen/Qwen3-30B-A3B-Instruct-2507\ninstances: [{dp: 2, ep: 2}]\n", []string{"dp 2 ep 2"}, 0},
		// A chat workload's rate is of conversation starts, not requests.
		{"workload: {chat: {conversations: 5, arrival: {kind: poisson, rate: 2}, turns: {kind: fixed, mean: 3}, think_ms: {kind: fixed, mean: 100}, message: {kind: fixed, mean: 10}, output: {kind: fixed, mean: 5}}}\n",
			[]string{"chat: 5 conversations, poisson starts at 2 conversations/s"}, 0},
	} {
		b := mustBuild(t, "d.yaml", c.yaml)
		d := b.Describe()
		text := strings.Join(d.Lines(), "\n")
		if strings.Contains(text, "starts at") && strings.Contains(text, "req/s") {
			t.Errorf("conversation starts labelled req/s:\n%s", text)
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("description of %q lacks %q:\n%s", c.yaml, w, text)
			}
		}
		if len(d.Warnings) != c.warnings {
			t.Errorf("%q: %d warnings, want %d: %v", c.yaml, len(d.Warnings), c.warnings, d.Warnings)
		}
	}
}

// A tensor-parallel group larger than its node says so in the description
// (tp 16 on 8-GPU H100 nodes: 2 nodes; tp 32: 4); one that fits, or
// fits the group's node_gpus, does not, nor does one spanning the 4-GPU
// trays of one GB200 NVL72 NVLink domain (72 GPUs).
func TestDescribeTPSpansNodes(t *testing.T) {
	tests := []struct {
		hardware, instances string
		nodes               int
	}{
		{"H100", "[{tp: 16}]", 2},
		{"H100", "[{tp: 32}]", 4},
		{"H100", "[{tp: 8}]", 0},
		{"H100", "[{tp: 16, node_gpus: 16}]", 0},
		{"GB200", "[{tp: 8}]", 0},
		{"GB200", "[{tp: 32}]", 0},
		{"B300", "[{tp: 16}]", 2},
	}
	for _, tt := range tests {
		b, err := buildYAML(t, "predictor: {kind: roofline}\nhardware: "+tt.hardware+"\ninstances: "+tt.instances+"\n")
		if err != nil {
			t.Fatal(err)
		}
		d := b.Describe()
		note := strings.Contains(strings.Join(d.Lines(), "\n"), "spans")
		if d.Groups[0].TPNodes != tt.nodes || note != (tt.nodes > 0) {
			t.Errorf("%s %s: tp_nodes %d (note %v), want %d", tt.hardware, tt.instances, d.Groups[0].TPNodes, note, tt.nodes)
		}
	}
}

// A tp group spanning nodes of a workstation card, whose catalog NIC is the
// PCIe path inside one host, warns that the cross-node all-reduces are
// priced on it; a datacenter NIC or links.tp_* set by the user do not.
func TestDescribeWarnsTPAcrossHostPath(t *testing.T) {
	tests := []struct {
		yaml string
		warn bool
	}{
		{"hardware: RTXPRO6000\ninstances: [{tp: 16}]\n", true},
		{"hardware: RTXPRO6000\ninstances: [{tp: 8}]\n", false},
		{"hardware: RTXPRO6000\ninstances: [{tp: 16}]\nlinks: {tp_bandwidth_gbps: 12.5, tp_latency_us: 20}\n", false},
		{"hardware: H100\ninstances: [{tp: 16}]\n", false},
	}
	for _, tt := range tests {
		b, err := buildYAML(t, "predictor: {kind: roofline}\n"+tt.yaml)
		if err != nil {
			t.Fatal(err)
		}
		warned := false
		for _, w := range b.Describe().Warnings {
			if strings.Contains(w, "PCIe path between GPUs of one host") && strings.Contains(w, "links.tp_bandwidth_gbps") {
				warned = true
			}
		}
		if warned != tt.warn {
			t.Errorf("%q: warned %v, want %v", tt.yaml, warned, tt.warn)
		}
	}
}

// Every accelerator the per-op performance database covers runs the
// roofline on its own embedded calibration: no borrowing, no warning.
func TestPerfDBAcceleratorsRunOnOwnCalibration(t *testing.T) {
	cat, err := hw.Default()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range cat.All() {
		if a.PerfDBSystem == "" {
			continue
		}
		n++
		b, err := buildYAML(t, "predictor: {kind: roofline}\nhardware: "+a.Name+"\n")
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		d := b.Describe()
		text := strings.Join(d.Lines(), "\n")
		if want := "roofline, " + a.Name + " calibrated (embedded calibration)"; !strings.Contains(text, want) || len(d.Warnings) != 0 {
			t.Errorf("%s: description lacks %q or warns %v:\n%s", a.Name, want, d.Warnings, text)
		}
	}
	if n != 9 {
		t.Errorf("%d accelerators with a perfdb_system, want 9", n)
	}
}
