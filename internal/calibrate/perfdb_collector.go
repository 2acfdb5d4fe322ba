package calibrate

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
)

// collected is what a GEMM row's collection timed besides the linear
// layer a served step runs: nothing, the native quantisation of a per-tensor
// fp8 row, or the host issue time of an eager block fp8 row.
type collected struct {
	native *nativeQuant
	eager  *eagerIssue
}

// ns is the time of the GEMM row of M, K, N (mkn) as its collection
// measured it, the served layer timed by r.
func (c collected) ns(r *perf.Roofline, mkn [3]int) float64 {
	ns := r.LinearNs(mkn[0], mkn[1], mkn[2])
	if c.native != nil {
		ns += c.native.ns(float64(mkn[0])*float64(mkn[1]), r.MemoryRate())
	}
	if c.eager != nil {
		ns = c.eager.ns(ns)
	}
	return ns
}

// nativeQuantBytes is the traffic per activation element that vLLM's
// PyTorch-native per-tensor fp8 quantisation (QuantFP8.forward_native,
// run eagerly, op by op) adds to the one fused kernel a served step runs:
// x.to(float32) writes 4 bytes, the multiply by the scale's reciprocal and
// the clamp each read and write 4, and the cast to fp8 reads 4; the bf16
// read (2) and the fp8 write (1) are paid either way.
const nativeQuantBytes = 4 + 8 + 8 + 4

// nativeQuant is the cost AIConfigurator's vLLM 0.14 GEMM collector
// timed with every per-tensor fp8 row on top of the layer a served step
// runs. That collector (collector/vllm/collect_gemm.py at vLLM 0.14.0)
// builds its layers under a default VllmConfig(), which from vLLM's
// optimisation levels on selects compile mode and so custom_ops "none":
// QuantFP8 then dispatches to its PyTorch-native forward, which the
// collector never compiles, so each row ran the quantisation as four
// elementwise kernels through an fp32 copy of the activations. A served
// vLLM step compiles that code into one fused kernel (or runs vLLM's CUDA
// kernel), which the roofline's FP8QuantNs and FP8QuantPsPerElem time.
// The extra time is the kernels' launches (fixedNs) plus
// nativeQuantBytes per element at the accelerator's effective memory
// rate for the part of the fp32 copy that does not stay in L2
// (4·M·K/l2Bytes of it, at most all). Both constants are properties of
// the collection, fitted on its rows (see checkCollection); a run never
// charges them.
type nativeQuant struct {
	fixedNs, l2Bytes float64
}

// ns is the extra time of a row of M·K activation elements on a roofline
// whose memory rate is memRate (bytes/s).
func (q *nativeQuant) ns(mk, memRate float64) float64 {
	miss := math.Min(1, 4*mk/q.l2Bytes)
	return q.fixedNs + nativeQuantBytes*mk/memRate*1e9*miss
}

// params are q's two constants as fit parameters (they set q, not the
// efficiencies); none for a nil q.
func (q *nativeQuant) params() []param {
	if q == nil {
		return nil
	}
	return []param{
		{"native_quant_fixed", func(*perf.Efficiency) float64 { return q.fixedNs },
			func(_ *perf.Efficiency, v float64) { q.fixedNs = v }, 3000, 10, 1e5},
		{"native_quant_l2", func(*perf.Efficiency) float64 { return q.l2Bytes },
			func(_ *perf.Efficiency, v float64) { q.l2Bytes = v }, 64e6, 1e6, 1e9},
	}
}

// nativeQuantTables reports whether the per-tensor fp8 rows of db were
// collected with the PyTorch-native quantisation (nativeQuant): the vLLM
// 0.14 collections (perfdb.DB.NativeQuantFP8). The 0.19.0 collections of
// the same collector code show no such cost (h100_sxm's 0.19.0 fp8 rows
// at M 8192, K 4096, N 768: 86 µs, against 404 µs in its 0.14.0
// collection).
func nativeQuantTables(db *perfdb.DB) bool { return db.NativeQuantFP8() }

// checkCollection fits the constants of the collection's own costs
// (in.native, in.eager) on the rows they apply to with eff held: the
// terms a served step runs stay those of the calibration checked. No-op
// for a collection without such rows.
func checkCollection(eff perf.Efficiency, in *PerfDBInput) error {
	for _, c := range []struct {
		table  string
		params []param
	}{{TableGEMMFP8, in.native.params()}, {TableGEMMFP8Block, in.eager.params()}} {
		if len(c.params) == 0 || len(in.tables[c.table]) == 0 {
			continue
		}
		if _, _, err := fitGroup(eff, c.params, subsample(in.tables[c.table], maxDenseRows)); err != nil {
			return err
		}
	}
	return nil
}

// eagerRuns is how many times AIConfigurator's collector calls a layer
// between its two timing events (benchmark_with_power's num_runs, 6 in
// collector/vllm/collect_gemm.py).
const eagerRuns = 6

// eagerIssue is the host's time to issue one call of a layer that the
// collector timed outside a CUDA graph: since vLLM 0.19.0 its block fp8
// rows (collect_gemm.py runs them with use_cuda_graph=False, one layer
// per call). Between the timing events the host issues eagerRuns calls
// while the GPU runs them, so a call's measured time is the slower of the
// two plus 1/eagerRuns of the faster (the first issue before the GPU
// starts, or the last GPU work after the host is done). A served step
// replays its layers from CUDA graphs and never waits on that issue; the
// constant is the collection's, fitted on its rows (checkCollection), and a
// run never charges it.
type eagerIssue struct {
	hostNs float64
}

// eagerMinNs is the least host issue time the fit considers: at it the
// rows show none (every call's GPU time hides it).
const eagerMinNs = 100

// ns is the measured time of a call whose GPU time is gpuNs.
func (e *eagerIssue) ns(gpuNs float64) float64 {
	return math.Max(e.hostNs, gpuNs) + math.Min(e.hostNs, gpuNs)/eagerRuns
}

// params is e's constant as a fit parameter; none for a nil e.
func (e *eagerIssue) params() []param {
	if e == nil {
		return nil
	}
	return []param{{"eager_issue", func(*perf.Efficiency) float64 { return e.hostNs },
		func(_ *perf.Efficiency, v float64) { e.hostNs = v }, 20000, eagerMinNs, 1e6}}
}

// eagerBlockTables reports whether db's block fp8 rows were timed
// outside a CUDA graph (eagerIssue): the collections of vLLM 0.19.0 on.
func eagerBlockTables(db *perfdb.DB) bool {
	for _, t := range db.Tables {
		if t.Name == "gemm_perf" {
			return compareVersion(t.Version, "0.19.0") >= 0
		}
	}
	return false
}

// CollectionNote says which of the collection's own costs the last
// CheckPerfDB (or fit) of in modelled, with their fitted constants; ""
// when none applied.
func (in *PerfDBInput) CollectionNote() string {
	var parts []string
	if in.native != nil && len(in.tables[TableGEMMFP8]) > 0 {
		parts = append(parts, fmt.Sprintf("fp8 rows timed with vLLM's PyTorch-native activation quantisation (%.1f µs a row, and %d bytes an element at the memory rate for the share of its fp32 copy a %.0f MB cache does not keep)",
			in.native.fixedNs/1e3, nativeQuantBytes, in.native.l2Bytes/1e6))
	}
	if in.eager != nil && len(in.tables[TableGEMMFP8Block]) > 0 {
		issue := fmt.Sprintf("host issue %.1f µs a call", in.eager.hostNs/1e3)
		if in.eager.hostNs <= eagerMinNs*1.01 {
			issue = "no host issue time shows in them"
		}
		parts = append(parts, "block fp8 rows timed outside a CUDA graph ("+issue+")")
	}
	return strings.Join(parts, "; ")
}
