package calibrate

import (
	"testing"

	"github.com/servesim/servesim/internal/perf"
)

func TestPointDiag(t *testing.T) {
	eff := perf.Efficiency{AttnCompute: 0.5923553738324431, AttnMemory: 0.9195048105518624, AttnLaunchNs: 2293.9054113101333, AttnSharpness: 1.5463611360371206, AttnTileQ: 64, AttnUnits: 188, AttnCacheBytes: 1.3528086781349468e+08, AttnCacheSpeed: 16.744099287713656, AttnDecodeMemory: 1.0659904022748112, AttnDecodeLaunchNs: 6415.321655298791, AttnUnitNs: 4411.729284187114}
	r, _ := perf.NewRoofline(llamaModel, rtxpro, eff, 1)
	for _, p := range pts(t, "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1") {
		if p.Category == perf.CategoryAttention && (p.N == 16 || p.N == 128 || p.N == 64) && (p.KVD == 16384 || p.KVD == 64 || p.KVD == 1024) && (p.PC == 16 || p.PC == 128 || p.PC == 512 || p.PC == 2048) && (p.KP == 0 || p.KP == 4096 || p.KP == 16384) {
			b := p.Batch()
			pr := r.OpNs(p.Op, &b)
			t.Logf("pc=%5d kp=%5d n=%3d kvd=%5d meas=%9.1f pred=%9.1f err=%+6.1f%%", p.PC, p.KP, p.N, p.KVD, p.Ns/1000, pr/1000, 100*(pr/p.Ns-1))
		}
	}
}
