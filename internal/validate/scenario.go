package validate

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/quant"
	"github.com/servesim/servesim/internal/workload"
)

// This file rebuilds the scenario of a measured run from its files: the
// model and number formats, the predictor options, the engine settings
// (engine arguments, then vLLM's resolved configuration and KV-cache
// record where present), the one instance group, and the measured
// requests.

// Scenario rebuilds the scenario of a measured run (without its workload)
// and returns it with the measured requests.
func Scenario(o Options) (*config.Scenario, []workload.MeasuredRequest, *meta, error) {
	m, inst, err := readRun(o)
	if err != nil {
		return nil, nil, nil, err
	}
	metaFile := filepath.Join(o.Name, "meta.json")
	s := config.Default()
	s.Name = "validate " + o.Name
	s.Model = m.Model
	s.Hardware = inst.Hardware
	if err := setFormats(s, m, metaFile); err != nil {
		return nil, nil, nil, err
	}
	setPredictor(s, o)
	if err := setEngine(&s.Engine, m, inst, metaFile); err != nil {
		return nil, nil, nil, err
	}
	s.Instances = []config.Group{measuredGroup(s, m, inst)}
	s.FillGroups()
	reqs, err := readRequests(o)
	if err != nil {
		return nil, nil, nil, err
	}
	s.Workload.Trace = "measured"
	if err := s.Validate(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	return s, reqs, m, nil
}

// readRun reads and checks meta.json and the cluster file, and returns
// the run's metadata and its (first) instance.
func readRun(o Options) (*meta, *clusterInstance, error) {
	var m meta
	if err := readJSON(o.Measured, o.Name, "meta.json", &m); err != nil {
		return nil, nil, err
	}
	if data, err := fs.ReadFile(o.Measured, "meta.json"); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(o.Name, "meta.json"), err)
	} else if err := checkSettings(data, filepath.Join(o.Name, "meta.json")); err != nil {
		return nil, nil, err
	}
	var cf clusterFile
	if err := readJSON(o.Measured, o.Name, "llmservingsim-cluster.json", &cf); err != nil {
		return nil, nil, err
	}
	dp := max(1, m.EngineKwargs.DataParallelSize)
	n := 0
	for _, node := range cf.Nodes {
		n += len(node.Instances)
	}
	// The cluster file lists one entry per data-parallel rank.
	if n != dp {
		return nil, nil, fmt.Errorf("%s: %d instances for data_parallel_size %d; validate supports measured runs of one (data-parallel) instance", filepath.Join(o.Name, "llmservingsim-cluster.json"), n, dp)
	}
	inst := &cf.Nodes[0].Instances[0]
	if inst.Hardware == "" {
		return nil, nil, fmt.Errorf("%s: instance has no hardware", filepath.Join(o.Name, "llmservingsim-cluster.json"))
	}
	return &m, inst, nil
}

// setFormats sets the weights' dtype and the KV-cache element type of
// the run (metaFile names meta.json in errors).
func setFormats(s *config.Scenario, m *meta, metaFile string) error {
	ek := &m.EngineKwargs
	switch strings.ToLower(ek.Dtype) {
	case "", "bfloat16", "bf16", "auto":
		s.Dtype = "bf16"
	case "float16", "fp16", "half":
		s.Dtype = "fp16"
	default:
		return fmt.Errorf("%s: engine_kwargs.dtype %q is not supported (bf16 or fp16)", metaFile, ek.Dtype)
	}
	// The KV-cache element type sets the KV blocks and the attention
	// cost: taken from the run as vLLM's kv_cache_dtype, refused when
	// unknown rather than simulated as the default.
	s.KVCacheDtype = ek.KVCacheDtype
	if _, err := quant.Parse(quant.Spec{Dtype: s.Dtype, KVCacheDtype: s.KVCacheDtype}); err != nil {
		return fmt.Errorf("%s: engine_kwargs.kv_cache_dtype %q is not supported (%s)", metaFile, ek.KVCacheDtype, quant.KVDtypes)
	}
	return nil
}

// setPredictor applies the validation's predictor options.
func setPredictor(s *config.Scenario, o Options) {
	if o.Profiles != "" {
		s.Predictor.Profiles = o.Profiles
	}
	if o.StepOverheadUs != nil {
		s.Predictor.StepOverheadUs = *o.StepOverheadUs
	}
	if o.CollectiveScale != nil {
		s.Predictor.CollectiveScale = *o.CollectiveScale
	}
	if o.Predictor != "" {
		s.Predictor.Kind = config.PredictorKind(o.Predictor)
	}
	if o.MoEDistribution != "" {
		s.Predictor.MoEDistribution = o.MoEDistribution
	}
	s.Predictor.Calibration = o.Calibration
	s.CheckInvariants = o.CheckInvariants
}

// setEngine sets the engine from the run's engine arguments, then from
// vLLM's resolved settings and the KV-cache record where present.
func setEngine(e *config.Engine, m *meta, inst *clusterInstance, metaFile string) error {
	ek := &m.EngineKwargs
	// Settings common to every measured run (data README): block 16,
	// chunked prefill and prefix caching on, gpu_memory_utilization 0.9.
	e.MaxNumSeqs = ek.MaxNumSeqs
	e.MaxNumBatchedTokens = ek.MaxNumBatchedTokens
	if ek.MaxModelLen != nil {
		e.MaxModelLen = *ek.MaxModelLen
	}
	e.GPUMemoryUtilization = 0.9
	if inst.NPUMem.MemUtil > 0 {
		e.GPUMemoryUtilization = inst.NPUMem.MemUtil
	}
	if ek.GPUMemoryUtilization > 0 {
		e.GPUMemoryUtilization = ek.GPUMemoryUtilization
	}
	if rc := m.Resolved; rc != nil {
		if err := setResolved(e, rc); err != nil {
			return fmt.Errorf("%s: %w", metaFile, err)
		}
	}
	if kvc := m.KVCache; kvc != nil {
		if kvc.NumGPUBlocks > 0 {
			e.NumGPUBlocks = kvc.NumGPUBlocks
		}
		if kvc.BlockSize > 0 {
			e.BlockSize = kvc.BlockSize
		}
		if kvc.GPUMemoryUtilization > 0 {
			e.GPUMemoryUtilization = kvc.GPUMemoryUtilization
		}
		if kvc.EnablePrefixCaching != nil {
			e.PrefixCaching = kvc.EnablePrefixCaching
		}
	}
	return nil
}

// setResolved applies vLLM's resolved settings, ground truth where
// present.
func setResolved(e *config.Engine, rc *resolvedConfig) error {
	if c := rc.Compilation; c != nil {
		if len(c.Mode) > 0 && string(c.Mode) != "null" {
			mode, err := graphMode(c.Mode)
			if err != nil {
				return err
			}
			e.CUDAGraphMode = mode
		}
		if len(c.CaptureSizes) > 0 {
			e.CUDAGraphCaptureSizes = c.CaptureSizes
		}
	}
	if mc := rc.Model; mc != nil && mc.EnforceEager != nil {
		e.EnforceEager = mc.EnforceEager
	}
	if sc := rc.Scheduler; sc != nil {
		if sc.AsyncScheduling != nil {
			e.AsyncScheduling = sc.AsyncScheduling
		}
		if sc.MaxNumSeqs > 0 {
			e.MaxNumSeqs = sc.MaxNumSeqs
		}
		if sc.MaxNumBatchedTokens > 0 {
			e.MaxNumBatchedTokens = sc.MaxNumBatchedTokens
		}
		e.LongPrefillTokenThreshold = max(sc.LongPrefillTokenThreshold, 0)
		if sc.EnableChunkedPrefill != nil {
			e.ChunkedPrefill = sc.EnableChunkedPrefill
		}
		if sc.DisableHybridKVCache != nil {
			e.DisableHybridKVCacheManager = sc.DisableHybridKVCache
		}
	}
	if pc := rc.Parallel; pc != nil && pc.DisableCustomAllReduce != nil {
		e.DisableCustomAllReduce = pc.DisableCustomAllReduce
	}
	return nil
}

// measuredGroup is the run's one instance group: its accelerator (the
// device the run recorded, which also names s's hardware, when the
// catalog knows it) and memory, tensor parallelism, and data and expert
// parallelism.
func measuredGroup(s *config.Scenario, m *meta, inst *clusterInstance) config.Group {
	ek := &m.EngineKwargs
	dp := max(1, ek.DataParallelSize)
	tp := max(1, ek.TensorParallelSize)
	// The cluster file's link_bw/link_latency and mem_size are another
	// simulator's inputs, not measurements: the tensor-parallel link comes
	// from the catalog (with vLLM's all-reduce choice) and the device
	// memory from the run's hardware record, else the catalog.
	g := config.Group{Name: "measured", Hardware: inst.Hardware}
	if hwr := m.Hardware; hwr != nil {
		if hwr.DeviceTotalMemoryBytes > 0 {
			g.MemoryGB = float64(hwr.DeviceTotalMemoryBytes) / 1e9
		}
		// The device the run recorded names the catalog entry (and so its
		// link and peer-to-peer support) when the catalog knows it.
		if name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(hwr.DeviceName), "NVIDIA ")); name != "" {
			if acc, err := hw.Lookup(name); err == nil {
				g.Hardware = acc.Name
				s.Hardware = acc.Name
			}
		}
	}
	one := 1
	g.Count, g.TP = &one, &tp
	if dp > 1 || ek.EnableExpertParallel {
		// vLLM's enable_expert_parallel shards the experts over dp x tp.
		ep := 1
		if ek.EnableExpertParallel {
			ep = dp * tp
		}
		g.DP, g.EP = &dp, &ep
	}
	return g
}

// readRequests reads the run's measured requests (requests.jsonl).
func readRequests(o Options) ([]workload.MeasuredRequest, error) {
	name := filepath.Join(o.Name, "requests.jsonl")
	f, err := o.Measured.Open("requests.jsonl")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	reqs, err := workload.ReadMeasured(f, name)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests", name)
	}
	return reqs, nil
}
