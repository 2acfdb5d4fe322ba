package assemble

import (
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/quant"
)

// The step-latency predictors: the roofline and its calibration, the
// tensor-parallel collectives and the engine-side time.

// roofline builds the analytical predictor for model m on accelerator acc
// at tensor-parallel degree tp in the weight and KV-cache format qf, with
// the accelerator's calibration.
func roofline(s *config.Scenario, src config.Source, m *model.Config, acc hw.Accelerator, tp int, qf quant.Format) (perf.Predictor, error) {
	eff, _, err := calibrationFor(s, src, acc)
	if err != nil {
		return nil, err
	}
	rm, err := calibrate.ModelOf(m, s.Dtype)
	if err != nil {
		return nil, err
	}
	rh, err := calibrate.HWOf(acc, s.Dtype)
	if err != nil {
		return nil, err
	}
	if !qf.Off() {
		rm.KVBytesPerElem = qf.KVBytes()
		if qf.Quantized() {
			rm.WeightBytes = qf.WeightBytes()
			if rh.QuantPeakFLOPS, err = quantPeak(qf, acc); err != nil {
				return nil, err
			}
			rh.QuantFP8 = rh.QuantPeakFLOPS > 0 && qf.PerTensorFP8()
			rh.Scaled = scaledFormat(qf, rh.QuantPeakFLOPS > 0)
		}
	}
	return perf.NewRoofline(rm, rh, eff, tp)
}

// scaledFormat is the block-scaled GEMM family of qf's linear layers
// (perf.RooflineHW.Scaled): block-scaled fp8 where the part runs it at
// its FP8 rate (native), NVFP4; none for other formats.
func scaledFormat(qf quant.Format, native bool) perf.ScaledFormat {
	switch {
	case qf.Method == quant.FP8 && qf.Block[0] > 0 && native:
		return perf.ScaledFP8Block
	case qf.Method == quant.NVFP4:
		return perf.ScaledNVFP4
	}
	return perf.ScaledNone
}

// quantPeak is the dense tensor FLOP/s of qf's quantised GEMMs on acc: its
// FP8 or FP4 rate for W8A8 and W4A4 formats, 0 (the compute dtype's rate)
// for weight-only formats and for fp8 on parts without FP8 tensor cores.
func quantPeak(qf quant.Format, acc hw.Accelerator) (float64, error) {
	class, _, err := qf.GEMM(acc.Name, acc.PeakFLOPSFP8 > 0, acc.PeakFLOPSFP4 > 0)
	switch {
	case err != nil:
		return 0, err
	case class == quant.GEMMFP8:
		return acc.PeakFLOPS("fp8")
	case class == quant.GEMMFP4:
		return acc.PeakFLOPS("fp4")
	}
	return 0, nil
}

// profile loads the measured tables of model m on acc at tp for the
// scenario's format qf: the bundle of variant qf.Variant(), whose
// meta.yaml must record that variant. A format without a bundle is refused
// unless predictor.format_scaling is roofline-ratio: then the compute
// dtype's bundle is scaled step by step by the roofline's time in qf over
// its time in the compute dtype (perf.WithFormatScaling). scaled reports
// that the approximation is in use.
func profile(s *config.Scenario, src config.Source, profiles fs.FS, m *model.Config, acc hw.Accelerator, tp int, arch perf.Arch, cat *perf.Catalog, qf quant.Format) (pred perf.Predictor, scaled bool, err error) {
	want := s.Dtype
	if !qf.Off() {
		want = qf.Variant()
	}
	dir, err := perf.FindBundle(profiles, acc.Name, m.Name, want, tp)
	scale := false
	if err != nil && !qf.Off() {
		if s.Predictor.FormatScaling != config.FormatScalingRooflineRatio {
			return nil, false, fmt.Errorf("%w; the profile predictor refuses a format its tables were not measured with: set predictor.format_scaling: %s to scale the %s tables by the roofline's %s/%s step-time ratio (approximate, see docs/quantization.md), or predictor.kind: roofline",
				err, config.FormatScalingRooflineRatio, s.Dtype, want, s.Dtype)
		}
		want, scale = s.Dtype, true
		dir, err = perf.FindBundle(profiles, acc.Name, m.Name, want, tp)
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w; or set predictor.kind: roofline to simulate it without measured tables", err)
	}
	prof, err := perf.LoadProfile(profiles, dir, arch, cat)
	if err != nil {
		return nil, false, err
	}
	if prof.Variant != "" && prof.Variant != want {
		return nil, false, fmt.Errorf("profile %s: its meta.yaml records variant %q, not the %q this scenario needs; move the bundle to the folder of its variant", dir, prof.Variant, want)
	}
	if !scale {
		return prof, false, nil
	}
	ref, err := roofline(s, src, m, acc, tp, quant.Default())
	if err != nil {
		return nil, false, err
	}
	tgt, err := roofline(s, src, m, acc, tp, qf)
	if err != nil {
		return nil, false, err
	}
	return perf.WithFormatScaling(prof, ref, tgt), true, nil
}

// calibrationFor returns the roofline efficiencies of accelerator acc
// from the scenario's calibration file (or the embedded one) and where
// they come from. An uncalibrated accelerator borrows the calibration its
// catalog entry names (calibration_from), else that of the nearest
// calibrated architecture (calibrate.File.Lender; PyTorch-derived
// calibrations are never lent): fractions of peak transfer better between
// GPUs than generic defaults. The description names the lender.
func calibrationFor(s *config.Scenario, src config.Source, acc hw.Accelerator) (perf.Efficiency, string, error) {
	var file *calibrate.File
	var err error
	name := "embedded calibration"
	if s.Predictor.Calibration == "" {
		file, err = calibrate.Builtin()
	} else {
		p := resolve(src, s.Predictor.Calibration)
		name = p
		f, oerr := os.Open(p)
		if oerr != nil {
			return perf.Efficiency{}, "", fmt.Errorf("predictor.calibration: %w", oerr)
		}
		defer f.Close()
		file, err = calibrate.Load(f, p)
	}
	if err != nil {
		return perf.Efficiency{}, "", fmt.Errorf("predictor.calibration: %w", err)
	}
	if en, ok := file.Entry(acc.Name); ok {
		desc := fmt.Sprintf("%s calibrated (%s)", acc.Name, name)
		if l := en.Label(); l != "" {
			desc += "; " + l
		}
		return en.Efficiency(), desc, nil
	}
	cat, err := hw.Default()
	if err != nil {
		return perf.Efficiency{}, "", err
	}
	lender, why, ok, err := file.Lender(acc, cat)
	if err != nil {
		return perf.Efficiency{}, "", fmt.Errorf("hardware %s (%s): %w", acc.Name, name, err)
	}
	if !ok {
		return perf.DefaultEfficiency, fmt.Sprintf("%s is not calibrated and %s has no vLLM-kernel calibration to borrow: generic default efficiencies", acc.Name, name), nil
	}
	eff, _ := file.Lookup(lender)
	return eff, fmt.Sprintf("%s is not calibrated: efficiencies borrowed from %s, %s (%s); run servesim calibrate on a %s profile bundle", acc.Name, lender, why, name, acc.Name), nil
}

// borrowedFrom returns the accelerator a calibration description (of
// calibrationFor) says efficiencies are borrowed from, "" if none.
func borrowedFrom(desc string) string {
	_, rest, ok := strings.Cut(desc, "efficiencies borrowed from ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ",")
	return name
}

// tpComm describes the tensor-parallel collectives of one instance.
func tpComm(m *model.Config, acc hw.Accelerator, tp, bpe int, l config.Links, eng config.Engine) perf.TPComm {
	c := perf.TPComm{TP: tp, Layers: int(m.NumLayers), Hidden: int(m.HiddenSize), BytesPerElem: bpe,
		Vocab: int(m.VocabSize), LinkBW: acc.Link.Bandwidth, LinkLatencyNs: acc.Link.LatencyNs}
	override := false
	if l.TPBandwidthGBps > 0 {
		c.LinkBW = l.TPBandwidthGBps * 1e9
		override = true
	}
	if l.TPLatencyUs >= 0 {
		c.LinkLatencyNs = int64(l.TPLatencyUs * 1000)
		override = true
	}
	if !override {
		// vLLM's choice of custom all-reduce or NCCL on the catalog link.
		disable := eng.DisableCustomAllReduce != nil && *eng.DisableCustomAllReduce
		intra := perf.Interconnect{NVLink: acc.Link.FullyConnected(), P2P: acc.Link.P2P, LinkBW: acc.Link.Bandwidth}
		if g := acc.Node.LinkDomain(); g > 0 && tp > g {
			// The group spans nodes beyond one NVLink domain: its ring
			// crosses them on the NICs.
			c.AR = perf.NewSpanningAllReduce(tp, intra, acc.NIC.Bandwidth, acc.NIC.LatencyNs)
		} else {
			c.AR = perf.NewAllReduce(tp, intra, disable)
		}
	}
	return c
}

// calibratedComm applies the all-reduce constants of acc's own
// calibration (perf.Efficiency.Collective, fitted on the database's
// measured all-reduces) to tc's vLLM dispatch, inside one NVLink domain and
// without a links override (a group spanning nodes keeps its NIC
// constants). A borrowed calibration's constants are not applied: they
// were measured on the lender's fabric.
func calibratedComm(s *config.Scenario, src config.Source, acc hw.Accelerator, tc perf.TPComm) (perf.TPComm, error) {
	if tc.AR.N <= 1 {
		return tc, nil
	}
	if g := acc.Node.LinkDomain(); g > 0 && tc.TP > g {
		return tc, nil
	}
	eff, desc, err := calibrationFor(s, src, acc)
	if err != nil {
		return tc, err
	}
	if borrowedFrom(desc) != "" {
		return tc, nil
	}
	intra := perf.Interconnect{NVLink: acc.Link.FullyConnected(), P2P: acc.Link.P2P, LinkBW: acc.Link.Bandwidth}
	tc.AR = tc.AR.With(eff.Collective, intra)
	return tc, nil
}

// graphModes maps engine.cudagraph_mode to the predictor's mode.
var graphModes = map[config.CUDAGraphMode]perf.GraphMode{
	"":                           perf.GraphsFullAndPiecewise,
	config.GraphFullAndPiecewise: perf.GraphsFullAndPiecewise,
	config.GraphPiecewise:        perf.GraphsPiecewise,
	config.GraphFull:             perf.GraphsFull,
	config.GraphFullDecodeOnly:   perf.GraphsFullDecodeOnly,
	config.GraphNone:             perf.GraphsNone,
}

// engineTime resolves the engine-side time model of an instance: vLLM
// 0.19's CUDA-graph dispatch and capture sizes, the catalog's kernel
// counts, and the host time (overlapping the GPU under async scheduling;
// vLLM turns async scheduling off with pipeline parallelism).
func engineTime(eng config.Engine, m *model.Config, cat *perf.Catalog, moe bool, pp int) (perf.EngineTime, error) {
	mode, ok := graphModes[eng.CUDAGraphMode]
	if !ok {
		return perf.EngineTime{}, fmt.Errorf("engine.cudagraph_mode: unknown mode %q", eng.CUDAGraphMode)
	}
	sizes := eng.CUDAGraphCaptureSizes
	if eng.EnforceEager != nil && *eng.EnforceEager {
		mode, sizes = perf.GraphsNone, nil
	} else if sizes == nil {
		sizes = perf.DefaultCaptureSizes(eng.MaxNumSeqs, eng.MaxNumBatchedTokens)
	}
	if mode == perf.GraphsNone {
		sizes = nil
	} else if sp := eng.Speculative; sp != nil {
		sizes = perf.SpecCaptureSizes(eng.MaxNumSeqs, eng.MaxNumBatchedTokens, sp.NumSpeculativeTokens, eng.CUDAGraphCaptureSizes)
	}
	perLayer, attn, perStep := cat.Kernels(moe)
	return perf.EngineTime{
		Mode: mode, CaptureSizes: sizes,
		Layers: int(m.NumLayers), LayerKernels: perLayer, AttnKernels: attn, StepKernels: perStep + perf.StepKernels,
		GapEagerNs: perf.KernelGapEagerNs, GapGraphNs: perf.KernelGapGraphNs,
		Host:     perf.DefaultHostTime,
		LaunchNs: perf.KernelLaunchNs,
		Async:    eng.AsyncScheduling != nil && *eng.AsyncScheduling && pp <= 1,
	}, nil
}
