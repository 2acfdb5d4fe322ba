package assemble

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/perf"
)

// tinyAccel is a user-defined accelerator with round figures: 100 TFLOP/s
// BF16, 1,000 GB/s, borrowing H100's efficiencies.
const tinyAccel = `
hardware: Tiny
predictor: {kind: roofline}
accelerators:
  - name: Tiny
    memory_gb: 80
    mem_bw_gbps: 1000
    tflops_bf16: 100
    calibration_from: H100
    link: {kind: pcie, bw_gbps: 32, latency_ns: 2000}
    nic: {bw_gbit: 100, latency_ns: 5000}
    node: {gpus: 4, host_memory_gb: 256, host_bw_gbps: 32}
`

// TestDefinedAcceleratorRooflineByHand times Llama-3.1-8B's qkv_proj on
// the defined accelerator from its figures and H100's efficiencies by
// hand: 100 tokens, K = 4096, N = (32 + 2*8) * 128 = 6144.
func TestDefinedAcceleratorRooflineByHand(t *testing.T) {
	s, err := config.Parse([]byte(tinyAccel), "tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := HardwareCatalog(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := cat.Lookup("Tiny")
	if err != nil {
		t.Fatal(err)
	}
	eff, desc, err := calibrationFor(s, config.Source{}, acc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(desc, "Tiny is not calibrated: efficiencies borrowed from H100, named by its calibration_from") {
		t.Errorf("description %q does not name the lender", desc)
	}
	file, err := calibrate.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	h100, _ := file.Lookup("H100")
	if !reflect.DeepEqual(eff, h100) {
		t.Fatalf("efficiencies %+v, want H100's %+v", eff, h100)
	}
	b := mustBuild(t, "tiny.yaml", tinyAccel)
	rm, err := calibrate.ModelOf(b.Model(), "bf16")
	if err != nil {
		t.Fatal(err)
	}
	rh, err := calibrate.HWOf(acc, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	if rh.PeakFLOPS != 100e12 || rh.MemBandwidth != 1000e9 || rh.PackGQA {
		t.Fatalf("roofline hardware %+v, want 1e14 FLOP/s, 1e12 B/s, no GQA packing (no compute capability)", rh)
	}
	r, err := perf.NewRoofline(rm, rh, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	const flops = 2.0 * 100 * 4096 * 6144                 // 5,033,164,800
	const bytes = (4096*6144 + 100*4096 + 100*6144) * 2.0 // 52,379,648
	tc := flops / (100e12 * eff.Compute) * 1e9
	tm := bytes / (1000e9 * eff.Memory) * 1e9
	p := eff.Sharpness
	want := eff.LaunchNs + math.Pow(math.Pow(tc, p)+math.Pow(tm, p), 1/p)
	got := r.OpNs(perf.OpQKVProj, &perf.Batch{PrefillTokens: 100, PrefillSeqs: 1})
	if math.Abs(got-want) > 1e-6*want {
		t.Errorf("qkv_proj = %.3f ns, want %.3f by hand (compute %.3f, memory %.3f ns)", got, want, tc, tm)
	}
	// Doubling the bandwidth of the definition halves the memory term.
	s2, err := config.Parse([]byte(strings.Replace(tinyAccel, "mem_bw_gbps: 1000", "mem_bw_gbps: 2000", 1)), "tiny2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat2, err := HardwareCatalog(s2, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	acc2, _ := cat2.Lookup("Tiny")
	rh2, _ := calibrate.HWOf(acc2, "bf16")
	r2, err := perf.NewRoofline(rm, rh2, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	want2 := eff.LaunchNs + math.Pow(math.Pow(tc, p)+math.Pow(tm/2, p), 1/p)
	if got2 := r2.OpNs(perf.OpQKVProj, &perf.Batch{PrefillTokens: 100, PrefillSeqs: 1}); math.Abs(got2-want2) > 1e-6*want2 {
		t.Errorf("at 2,000 GB/s qkv_proj = %.3f ns, want %.3f", got2, want2)
	}
}

// TestNearestCalibratedArchitecture checks the lender chosen for each new
// catalog entry were its calibration_from removed: the rule the catalog's
// choices follow, computed by hand from the catalog's figures.
func TestNearestCalibratedArchitecture(t *testing.T) {
	file, err := calibrate.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	s, err := config.Parse([]byte("hardware: H100\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := HardwareCatalog(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ acc, lender, why string }{
		{"A100-40GB", "A100", "compute capability 8.0"},
		{"H100-PCIe", "H100", "compute capability 9.0"},
		// H20 (9.0): H100 |ln(4000/3350)| + |ln(148/989.5)| = 2.077 vs
		// H200 |ln(4000/4800)| + the same = 2.082.
		{"H20", "H100", "compute capability 9.0"},
		{"L4", "L40S", "compute capability 8.9"},
		{"RTX6000Ada", "L40S", "compute capability 8.9"},
		{"RTX4090", "L40S", "compute capability 8.9"},
		// No compute capability: H200 |ln(5300/4800)| + |ln(1307.4/989.5)|
		// = 0.378, the smallest (H100 0.737, B300 0.923, B200 0.955).
		{"MI300X", "H200", "closest memory bandwidth and BF16 peak"},
		{"MI325X", "H200", "closest memory bandwidth and BF16 peak"},
	} {
		acc, err := cat.Lookup(tt.acc)
		if err != nil {
			t.Fatal(err)
		}
		acc.CalibrationFrom = ""
		got, why, ok, err := file.Lender(acc, cat)
		if err != nil || !ok || got != tt.lender || !strings.Contains(why, tt.why) {
			t.Errorf("%s: lender %q (%s), %v, %v; want %s (%s)", tt.acc, got, why, ok, err, tt.lender, tt.why)
		}
	}
}

// An xGMI link (MI300X) is all-to-all like NVLink through NVSwitch: tensor-
// parallel all-reduces of 8 GPUs run vLLM's custom kernel at the link's
// rate, with NCCL's NVLink bus efficiency beyond it; a PCIe copy of the
// same figures does not get the custom kernel at tp 8.
func TestXGMILinkIsFullyConnected(t *testing.T) {
	s, err := config.Parse([]byte("hardware: MI300X\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := HardwareCatalog(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := cat.Lookup("MI300X")
	if err != nil {
		t.Fatal(err)
	}
	b := mustBuild(t, "s.yaml", "predictor: {kind: roofline}\nhardware: MI300X\n")
	tc := tpComm(b.Model(), acc, 8, 2, config.Links{LatencyUs: -1, TPLatencyUs: -1}, config.Engine{})
	if !tc.AR.Custom || tc.AR.BusBW != perf.NCCLBusEffNVLink*448e9 {
		t.Errorf("MI300X tp 8 all-reduce %+v: want the custom kernel and bus bandwidth %.4g", tc.AR, perf.NCCLBusEffNVLink*448e9)
	}
	pcie := acc
	pcie.Link.Kind = "pcie"
	if tc := tpComm(b.Model(), pcie, 8, 2, config.Links{LatencyUs: -1, TPLatencyUs: -1}, config.Engine{}); tc.AR.Custom {
		t.Errorf("a PCIe link at tp 8 got the custom all-reduce: %+v", tc.AR)
	}
}
