package calibrate

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/servesim/servesim/internal/perf"
)

// FileVersion is the format version Write emits and Load accepts.
const FileVersion = 1

// File is a calibration file: roofline efficiencies per accelerator.
type File struct {
	Version      int               `yaml:"version"`
	Accelerators map[string]*Entry `yaml:"accelerators"`
}

// Entry is one accelerator's calibration. Times are in microseconds and
// cache sizes in MB (10^6 bytes) for readability; Efficiency converts.
type Entry struct {
	// Source names the profile bundle(s) the entry was fitted on.
	Source string `yaml:"source,omitempty"`
	// Derived labels a calibration fitted on tables that are not vLLM
	// kernel timings: DerivedPyTorch for v0 profiles (HuggingFace modules
	// in PyTorch eager mode). Such an entry is used for its own
	// accelerator, labelled, and never lent to another (see Fallback).
	Derived string `yaml:"derived,omitempty"`
	// Kept, on a calibration fitted on per-op tables that cannot inform
	// every field (a performance database: GEMM and attention kernels
	// only), names the calibration the other fields were kept from and
	// which: "RTXPRO6000: op_scale, cache_mb, ...". Such an entry is used
	// for its own accelerator, labelled, and is not the generic fallback
	// (see Fallback: the calibration it keeps from is), though Lender may
	// lend it to an accelerator of its architecture.
	Kept string `yaml:"kept,omitempty"`

	ComputeEff    float64            `yaml:"compute_eff"`
	MemoryEff     float64            `yaml:"memory_eff"`
	LaunchUs      float64            `yaml:"launch_us"`
	Sharpness     float64            `yaml:"sharpness"`
	CacheMB       float64            `yaml:"cache_mb"`
	CacheSpeed    float64            `yaml:"cache_speed"`
	SamplerPasses float64            `yaml:"sampler_passes"`
	SamplerUs     float64            `yaml:"sampler_us"`
	OpScale       map[string]float64 `yaml:"op_scale,omitempty"`
	// FP8ComputeEff and FP8QuantUs are perf.Efficiency.FP8Compute and
	// FP8QuantNs (µs): the fp8 W8A8 GEMMs' fraction of the FP8 tensor rate
	// and their activation quantisation kernel (0: compute_eff, none).
	FP8ComputeEff float64 `yaml:"fp8_compute_eff,omitempty"`
	FP8QuantUs    float64 `yaml:"fp8_quant_us,omitempty"`
	// FP8Sharpness is perf.Efficiency.FP8Sharpness (0: sharpness).
	FP8Sharpness float64 `yaml:"fp8_sharpness,omitempty"`
	// FP8QuantPsPerElem is perf.Efficiency.FP8QuantPsPerElem (ps).
	FP8QuantPsPerElem float64 `yaml:"fp8_quant_ps_per_elem,omitempty"`
	// FP8Waves is perf.Efficiency.FP8Waves.
	FP8Waves bool `yaml:"fp8_waves,omitempty"`
	// FP8Source, on an entry fitted on other tables, names the per-op
	// kernel tables its fp8 terms alone were fitted on, every other field
	// held (FitPerfDBFP8): "perfdb:<system>/vllm/<version>".
	FP8Source string `yaml:"fp8_source,omitempty"`
	// FP8Block and NVFP4 are perf.Efficiency.FP8Block and NVFP4: the GEMM
	// terms of block-scaled fp8 and NVFP4 linear layers (absent: the bf16
	// terms at the format's tensor rate).
	FP8Block *ScaledEntry `yaml:"fp8_block,omitempty"`
	NVFP4    *ScaledEntry `yaml:"nvfp4,omitempty"`
	// AllReduce is perf.Efficiency.Collective: the tensor-parallel
	// all-reduce constants fitted on measured all-reduces (absent: the
	// link kind's defaults).
	AllReduce *AllReduceEntry `yaml:"allreduce,omitempty"`

	Attention AttentionEntry `yaml:"attention"`

	// Fit is the in-sample accuracy of the calibration, per table
	// (informational; ignored by Efficiency).
	Fit map[string]FitStats `yaml:"fit,omitempty"`
}

// AttentionEntry holds the attention kernel's constants (see
// perf.Efficiency's Attn* fields).
type AttentionEntry struct {
	ComputeEff      float64 `yaml:"compute_eff"`
	MemoryEff       float64 `yaml:"memory_eff"`
	DecodeMemoryEff float64 `yaml:"decode_memory_eff"`
	LaunchUs        float64 `yaml:"launch_us"`
	DecodeLaunchUs  float64 `yaml:"decode_launch_us"`
	Sharpness       float64 `yaml:"sharpness"`
	TileQ           int     `yaml:"tile_q"`
	Units           int     `yaml:"units"`
	// UnitsPerSM is perf.Efficiency.AttnUnitsPerSM (0: the wave is
	// Units wide).
	UnitsPerSM int `yaml:"units_per_sm,omitempty"`
	// DecodeUnitsPerSM is perf.Efficiency.AttnDecodeUnitsPerSM (0:
	// units_per_sm).
	DecodeUnitsPerSM int     `yaml:"decode_units_per_sm,omitempty"`
	UnitUs           float64 `yaml:"unit_us"`
	EmptyUs          float64 `yaml:"empty_us"`
	CacheMB          float64 `yaml:"cache_mb"`
	CacheSpeed       float64 `yaml:"cache_speed"`
	// Skew and DecodeSkew are perf.Efficiency.AttnSkew and AttnDecodeSkew
	// (0: no skew correction).
	Skew       float64 `yaml:"skew,omitempty"`
	DecodeSkew float64 `yaml:"decode_skew,omitempty"`
	// DecodeCopyUs is perf.Efficiency.AttnDecodeCopyNs in µs (0: not
	// charged).
	DecodeCopyUs float64 `yaml:"decode_copy_us,omitempty"`
	// DecodeUnitUs is perf.Efficiency.AttnDecodeUnitNs in µs (0: unit_us).
	DecodeUnitUs float64 `yaml:"decode_unit_us,omitempty"`
}

// ScaledEntry is perf.ScaledGEMM in the file's units (µs, ps).
type ScaledEntry struct {
	ComputeEff     float64 `yaml:"compute_eff"`
	MemoryEff      float64 `yaml:"memory_eff"`
	QuantUs        float64 `yaml:"quant_us"`
	QuantPsPerElem float64 `yaml:"quant_ps_per_elem"`
	Sharpness      float64 `yaml:"sharpness"`
}

// newScaledEntry is g rounded for a file; nil when g is zero.
func newScaledEntry(g perf.ScaledGEMM) *ScaledEntry {
	if g.IsZero() {
		return nil
	}
	return &ScaledEntry{ComputeEff: round4(g.Compute), MemoryEff: round4(g.Memory), QuantUs: round4(g.QuantNs / 1e3),
		QuantPsPerElem: round4(g.QuantPsPerElem), Sharpness: round4(g.Sharpness)}
}

// gemm is the entry in the roofline's units (zero for nil).
func (s *ScaledEntry) gemm() perf.ScaledGEMM {
	if s == nil {
		return perf.ScaledGEMM{}
	}
	return perf.ScaledGEMM{Compute: s.ComputeEff, Memory: s.MemoryEff, QuantNs: s.QuantUs * 1e3, QuantPsPerElem: s.QuantPsPerElem, Sharpness: s.Sharpness}
}

// AllReduceEntry is perf.CollectiveEff in the file's units (µs).
type AllReduceEntry struct {
	CustomLatencyUs float64 `yaml:"custom_latency_us"`
	NCCLLatencyUs   float64 `yaml:"nccl_latency_us"`
	BusEff          float64 `yaml:"bus_eff"`
}

func newAllReduceEntry(c perf.CollectiveEff) *AllReduceEntry {
	if c.IsZero() {
		return nil
	}
	return &AllReduceEntry{CustomLatencyUs: round4(c.CustomLatencyNs / 1e3), NCCLLatencyUs: round4(c.NCCLLatencyNs / 1e3), BusEff: round4(c.BusEff)}
}

func (a *AllReduceEntry) eff() perf.CollectiveEff {
	if a == nil {
		return perf.CollectiveEff{}
	}
	return perf.CollectiveEff{CustomLatencyNs: a.CustomLatencyUs * 1e3, NCCLLatencyNs: a.NCCLLatencyUs * 1e3, BusEff: a.BusEff}
}

// FitStats is the accuracy of a fit on one table: median and 90th
// percentile of |predicted/measured - 1|.
type FitStats struct {
	Rows   int     `yaml:"rows"`
	Median float64 `yaml:"median"`
	P90    float64 `yaml:"p90"`
}

// NewEntry converts fitted efficiencies (and optionally the fit's report)
// into a file entry, rounding to 4 significant digits.
func NewEntry(e perf.Efficiency, source string, rep *Report) *Entry {
	en := &Entry{
		Source:            source,
		ComputeEff:        round4(e.Compute),
		MemoryEff:         round4(e.Memory),
		LaunchUs:          round4(e.LaunchNs / 1e3),
		Sharpness:         round4(e.Sharpness),
		CacheMB:           round4(e.CacheBytes / 1e6),
		CacheSpeed:        round4(e.CacheSpeed),
		SamplerPasses:     round4(e.SamplerPasses),
		SamplerUs:         round4(e.SamplerNs / 1e3),
		FP8ComputeEff:     round4(e.FP8Compute),
		FP8QuantUs:        round4(e.FP8QuantNs / 1e3),
		FP8Sharpness:      round4(e.FP8Sharpness),
		FP8Waves:          e.FP8Waves,
		FP8QuantPsPerElem: round4(e.FP8QuantPsPerElem),
		FP8Block:          newScaledEntry(e.FP8Block),
		NVFP4:             newScaledEntry(e.NVFP4),
		AllReduce:         newAllReduceEntry(e.Collective),
		Attention: AttentionEntry{
			ComputeEff:       round4(e.AttnCompute),
			MemoryEff:        round4(e.AttnMemory),
			DecodeMemoryEff:  round4(e.AttnDecodeMemory),
			LaunchUs:         round4(e.AttnLaunchNs / 1e3),
			DecodeLaunchUs:   round4(e.AttnDecodeLaunchNs / 1e3),
			Sharpness:        round4(e.AttnSharpness),
			TileQ:            e.AttnTileQ,
			Units:            e.AttnUnits,
			UnitsPerSM:       e.AttnUnitsPerSM,
			DecodeUnitsPerSM: e.AttnDecodeUnitsPerSM,
			UnitUs:           round4(e.AttnUnitNs / 1e3),
			EmptyUs:          round4(e.AttnEmptyNs / 1e3),
			CacheMB:          round4(e.AttnCacheBytes / 1e6),
			CacheSpeed:       round4(e.AttnCacheSpeed),
			Skew:             round4(e.AttnSkew),
			DecodeSkew:       round4(e.AttnDecodeSkew),
			DecodeCopyUs:     round4(e.AttnDecodeCopyNs / 1e3),
			DecodeUnitUs:     round4(e.AttnDecodeUnitNs / 1e3),
		},
	}
	if len(e.OpScale) > 0 {
		en.OpScale = map[string]float64{}
		for k, v := range e.OpScale {
			en.OpScale[k] = round4(v)
		}
	}
	if rep != nil {
		en.Fit = map[string]FitStats{}
		for k, s := range rep.Tables {
			en.Fit[k] = FitStats{Rows: s.Count, Median: round4(s.Median), P90: round4(s.P90)}
		}
	}
	return en
}

// Efficiency converts the entry to the roofline's units. Fields left at 0
// take perf.DefaultEfficiency's values when the roofline is built.
func (en *Entry) Efficiency() perf.Efficiency {
	a := en.Attention
	e := perf.Efficiency{
		Compute:              en.ComputeEff,
		Memory:               en.MemoryEff,
		LaunchNs:             en.LaunchUs * 1e3,
		Sharpness:            en.Sharpness,
		CacheBytes:           en.CacheMB * 1e6,
		CacheSpeed:           en.CacheSpeed,
		SamplerPasses:        en.SamplerPasses,
		SamplerNs:            en.SamplerUs * 1e3,
		FP8Compute:           en.FP8ComputeEff,
		FP8QuantNs:           en.FP8QuantUs * 1e3,
		FP8Sharpness:         en.FP8Sharpness,
		FP8Waves:             en.FP8Waves,
		FP8QuantPsPerElem:    en.FP8QuantPsPerElem,
		FP8Block:             en.FP8Block.gemm(),
		NVFP4:                en.NVFP4.gemm(),
		Collective:           en.AllReduce.eff(),
		AttnCompute:          a.ComputeEff,
		AttnMemory:           a.MemoryEff,
		AttnDecodeMemory:     a.DecodeMemoryEff,
		AttnLaunchNs:         a.LaunchUs * 1e3,
		AttnDecodeLaunchNs:   a.DecodeLaunchUs * 1e3,
		AttnSharpness:        a.Sharpness,
		AttnTileQ:            a.TileQ,
		AttnUnits:            a.Units,
		AttnUnitsPerSM:       a.UnitsPerSM,
		AttnDecodeUnitsPerSM: a.DecodeUnitsPerSM,
		AttnUnitNs:           a.UnitUs * 1e3,
		AttnEmptyNs:          a.EmptyUs * 1e3,
		AttnCacheBytes:       a.CacheMB * 1e6,
		AttnCacheSpeed:       a.CacheSpeed,
		AttnSkew:             a.Skew,
		AttnDecodeSkew:       a.DecodeSkew,
		AttnDecodeCopyNs:     a.DecodeCopyUs * 1e3,
		AttnDecodeUnitNs:     a.DecodeUnitUs * 1e3,
	}
	if len(en.OpScale) > 0 {
		e.OpScale = map[string]float64{}
		for k, v := range en.OpScale {
			e.OpScale[k] = v
		}
	}
	return e
}

func round4(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	mag := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*mag) / mag
}

// Lookup returns the efficiencies of an accelerator by its catalog name
// (case-insensitive).
func (f *File) Lookup(accelerator string) (perf.Efficiency, bool) {
	if f == nil {
		return perf.Efficiency{}, false
	}
	if en, ok := f.Accelerators[accelerator]; ok && en != nil {
		return en.Efficiency(), true
	}
	for k, en := range f.Accelerators {
		if strings.EqualFold(k, accelerator) && en != nil {
			return en.Efficiency(), true
		}
	}
	return perf.Efficiency{}, false
}

// DerivedPyTorch is Entry.Derived of calibrations fitted on PyTorch eager
// per-module profiles.
const DerivedPyTorch = "pytorch-eager"

// Label describes where an entry's efficiencies come from, for run
// descriptions: "" for vLLM-kernel tables, else a warning naming the kind.
func (en *Entry) Label() string {
	if en == nil {
		return ""
	}
	if en.Derived == "" {
		if en.Kept != "" {
			return "fitted on per-op kernel tables " + en.Source + "; kept from " + en.Kept
		}
		return ""
	}
	if en.Derived == DerivedPyTorch {
		return "PyTorch-derived: fitted on HuggingFace eager per-module timings, not vLLM kernels"
	}
	return "derived from " + en.Derived + " tables"
}

// Entry returns an accelerator's entry by catalog name (case-insensitive).
func (f *File) Entry(accelerator string) (*Entry, bool) {
	if f == nil {
		return nil, false
	}
	if en, ok := f.Accelerators[accelerator]; ok && en != nil {
		return en, true
	}
	for _, k := range f.Names() {
		if en := f.Accelerators[k]; strings.EqualFold(k, accelerator) && en != nil {
			return en, true
		}
	}
	return nil, false
}

// Fallback names the entry an uncalibrated accelerator borrows: the first,
// by name, fitted on whole-step vLLM-kernel tables (Derived and Kept
// empty). A PyTorch-derived calibration never becomes another
// accelerator's default, nor does one fitted on per-op tables that keeps
// fields of another. ok is false when no entry may be lent.
func (f *File) Fallback() (string, bool) {
	if f == nil {
		return "", false
	}
	for _, k := range f.Names() {
		if en := f.Accelerators[k]; en != nil && en.Derived == "" && en.Kept == "" {
			return k, true
		}
	}
	return "", false
}

// Names lists the calibrated accelerators, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Accelerators))
	for k := range f.Accelerators {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Load parses a calibration file. Unknown fields are errors; every entry's
// efficiencies must pass perf.Efficiency.Validate.
func Load(r io.Reader, source string) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("calibration %s: %w", source, err)
	}
	var f File
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("calibration %s: %w", source, err)
	}
	if f.Version != FileVersion {
		return nil, fmt.Errorf("calibration %s: version %d, want %d", source, f.Version, FileVersion)
	}
	for _, name := range f.Names() {
		en := f.Accelerators[name]
		if en == nil {
			return nil, fmt.Errorf("calibration %s: accelerator %s has no fields", source, name)
		}
		if err := en.Efficiency().Validate(); err != nil {
			return nil, fmt.Errorf("calibration %s: accelerator %s: %w", source, name, err)
		}
	}
	return &f, nil
}

// ReadFile loads the calibration file name from fsys.
func ReadFile(fsys fs.FS, name string) (*File, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	return Load(bytes.NewReader(data), name)
}

// Write encodes f as YAML, accelerators sorted by name, with a header
// comment.
func Write(w io.Writer, f *File) error {
	if f.Version == 0 {
		f.Version = FileVersion
	}
	data, err := yaml.MarshalWithOptions(f, yaml.Indent(2))
	if err != nil {
		return fmt.Errorf("calibration: %w", err)
	}
	const header = "# servesim roofline calibration: per-accelerator efficiencies fitted to\n" +
		"# measured profile tables (servesim calibrate). Times in us, caches in MB.\n"
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}
