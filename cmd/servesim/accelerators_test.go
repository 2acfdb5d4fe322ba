package main

import (
	"strings"
	"testing"
)

// copyOfL4 is the catalog's L4 entry under another name, field for field
// (internal/hw/catalog.yaml), without calibration_from: the nearest
// calibrated architecture (compute capability 8.9: L40S) must be the
// lender the catalog entry names.
const copyOfL4 = `accelerators:
  - name: MyL4
    memory_gib: 24
    mem_bw_gbps: 300
    tflops_bf16: 121
    tflops_fp8: 242.5
    compute_capability: 8.9
    link: {kind: pcie, bw_gbps: 31.5, latency_ns: 2000}
    nic: {bw_gbit: 100, latency_ns: 10000}
    node: {gpus: 8, host_memory_gb: 384, host_bw_gbps: 31.5}
`

// A user-defined accelerator identical to a catalog one gives the same
// run, byte for byte once the name is replaced, from a file
// (--accelerators) and from the scenario (accelerators:).
func TestUserAcceleratorMatchesCatalogEntry(t *testing.T) {
	dir := t.TempDir()
	accFile := write(t, dir, "accels.yaml", copyOfL4)
	scenario := "model: meta-llama/Llama-3.1-8B\npredictor: {kind: roofline}\ninstances: [{tp: 2}]\nworkload: {limit: 60}\n"
	base := write(t, dir, "s.yaml", scenario)
	inline := write(t, dir, "inline.yaml", scenario+copyOfL4)

	code, want, stderr := run(t, "run", "-c", base, "--hardware", "L4")
	if code != 0 {
		t.Fatalf("catalog L4: exit %d: %s", code, stderr)
	}
	if !strings.Contains(want, "borrowed calibration of L40S") || !strings.Contains(want, "L4 is not calibrated: efficiencies borrowed from L40S, named by its calibration_from") {
		t.Errorf("catalog L4 output does not name its lender:\n%s", want)
	}
	for _, args := range [][]string{
		{"run", "-c", base, "--accelerators", accFile, "--hardware", "MyL4"},
		{"run", "-c", inline, "--hardware", "MyL4"},
	} {
		code, got, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if !strings.Contains(got, "the nearest calibrated architecture: compute capability 8.9") {
			t.Errorf("%v: the lender is not named as the nearest architecture:\n%s", args, got)
		}
		got = strings.ReplaceAll(got, "MyL4", "L4")
		got = strings.ReplaceAll(got, "the nearest calibrated architecture: compute capability 8.9", "named by its calibration_from")
		if got != want {
			t.Errorf("%v: output differs from the catalog L4's:\n--- got\n%s\n--- want\n%s", args, got, want)
		}
	}
}

func TestUserAcceleratorErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"bandwidth", "hardware: X\naccelerators:\n  - name: X\n    base: H100\n    mem_bw_gbps: 0\n",
			[]string{"s.yaml:5:18", "accelerators[0].mem_bw_gbps", "must be > 0"}},
		{"missing link", "hardware: X\naccelerators:\n  - name: X\n    memory_gb: 80\n    mem_bw_gbps: 2000\n    tflops_bf16: 300\n",
			[]string{"accelerators[0].link", "missing (required: kind, bw_gbps, latency_ns)"}},
		{"link kind", "hardware: X\naccelerators:\n  - name: X\n    base: H100\n    link: {kind: infinityband}\n",
			[]string{"accelerators[0].link.kind", "must be nvlink, xgmi or pcie"}},
		{"unknown field", "hardware: X\naccelerators:\n  - name: X\n    base: H100\n    mem_bandwidth: 3\n",
			[]string{"s.yaml:5:5", "mem_bandwidth"}},
		{"calibration_from", "predictor: {kind: roofline}\nhardware: X\naccelerators:\n  - name: X\n    base: H100\n    calibration_from: TPUv5\n",
			[]string{"calibration_from: TPUv5 has no calibration here", "H100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, dir, "s.yaml", tt.yaml)
			code, _, stderr := run(t, "run", "-c", p)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("error %q lacks %q", stderr, w)
				}
			}
		})
	}
}
