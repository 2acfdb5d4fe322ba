package runner

import (
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
)

// TestGPUGenerationsOrder: on the default workload (decode-bound at its
// 128-sequence cap), every database-calibrated datacenter GPU keeps the
// order of its memory bandwidth, with the roofline and with the kernel
// database: Blackwell (7.7-8 TB/s) under H200 (4.8 TB/s) under H100 (3.35
// TB/s). A degenerate calibration (an attention wave of a few units made
// Blackwell's mixed steps slower than H100's) fails it.
func TestGPUGenerationsOrder(t *testing.T) {
	for _, kind := range []string{"roofline", "perfdb"} {
		tpot := map[string]float64{}
		for _, hw := range []string{"H100", "H200", "B200", "B300", "GB200", "GB300"} {
			s, err := config.Parse([]byte("hardware: "+hw+"\npredictor: {kind: "+kind+"}\nworkload: {limit: 100}\n"), "gen.yaml")
			if err != nil {
				t.Fatal(err)
			}
			b, err := assemble.Build(s, config.Source{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tpot[hw] = res.TPOT.Mean
		}
		for _, bw := range []string{"B200", "B300", "GB200", "GB300"} {
			if !(tpot[bw] < tpot["H200"] && tpot["H200"] < tpot["H100"]) {
				t.Errorf("%s: TPOT mean %s %.2f ms, H200 %.2f, H100 %.2f: want Blackwell < H200 < H100", kind, bw, tpot[bw], tpot["H200"], tpot["H100"])
			}
		}
	}
}
