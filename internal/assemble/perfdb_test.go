package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
)

// Every accelerator with a database system builds a perfdb predictor on
// its own tables and times a step; the description names the system and
// its tables.
func TestPerfDBEverySystem(t *testing.T) {
	n := 0
	for _, name := range hw.Names() {
		acc, err := hw.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if acc.PerfDBSystem == "" {
			continue
		}
		n++
		b, err := buildYAML(t, "hardware: "+name+"\npredictor: {kind: perfdb}\nengine: {max_num_seqs: 64, max_num_batched_tokens: 2048}\n")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := b.Describe()
		if lat := d.Groups[0].Latency; !strings.Contains(lat, "perfdb "+acc.PerfDBSystem) || !strings.Contains(lat, "gemm_perf") {
			t.Errorf("%s: latency source %q does not name the system and its tables", name, lat)
		}
		if got := b.instances[0].Predictor.StepTime(&perf.Batch{NumDecode: 16, DecodeKVSum: 16 * 500, DecodeKVMax: 500, DecodeKVMin: 500}); got <= 0 {
			t.Errorf("%s: decode step %d ns", name, got)
		}
	}
	if n < 9 {
		t.Errorf("%d accelerators have a database system, want the nine embedded ones", n)
	}
}

func TestPerfDBErrors(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"no system for the hardware", "hardware: RTX4090\npredictor: {kind: perfdb}\n", []string{"RTX4090 has no per-op database system", "predictor.system", "h100_sxm"}},
		{"unknown system", "predictor: {kind: perfdb, system: tpu_v9}\n", []string{"system tpu_v9"}},
		{"path missing", "predictor: {kind: perfdb, path: /nonexistent/systems}\n", []string{"predictor.path", "/nonexistent/systems"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildYAML(t, tt.yaml)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
