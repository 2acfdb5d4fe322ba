package perfdb

import (
	"bytes"
	"fmt"
	"io/fs"

	"github.com/goccy/go-yaml"
)

// SystemSpec is what a system's yaml says about one GPU and its node.
type SystemSpec struct {
	// MemBW is the device memory bandwidth, bytes/s; MemCapacity the
	// device memory, bytes.
	MemBW, MemCapacity float64
	// BF16FLOPS, FP8FLOPS and FP4FLOPS are dense tensor FLOP/s (0 when the
	// yaml gives none).
	BF16FLOPS, FP8FLOPS, FP4FLOPS float64
	// GPUsPerNode is the GPUs of one node (72 for an NVL72 rack).
	GPUsPerNode int
	// IntraNodeBW, InterNodeBW and PCIeBW are per GPU and direction,
	// bytes/s.
	IntraNodeBW, InterNodeBW, PCIeBW float64
	// SMVersion is the CUDA compute capability times ten (90 for Hopper).
	SMVersion int
}

type rawSpec struct {
	GPU struct {
		MemBW     float64 `yaml:"mem_bw"`
		MemCap    float64 `yaml:"mem_capacity"`
		BF16      float64 `yaml:"bfloat16_tc_flops"`
		FP8       float64 `yaml:"fp8_tc_flops"`
		FP4       float64 `yaml:"fp4_tc_flops"`
		SMVersion int     `yaml:"sm_version"`
	} `yaml:"gpu"`
	Node struct {
		GPUs  int     `yaml:"num_gpus_per_node"`
		Inter float64 `yaml:"inter_node_bw"`
		Intra float64 `yaml:"intra_node_bw"`
		PCIe  float64 `yaml:"pcie_bw"`
	} `yaml:"node"`
}

// readSpec reads <system>.yaml. Unknown keys are ignored (the file holds
// much servesim does not use); the bandwidth, memory and BF16 rate must be
// positive.
func readSpec(fsys fs.FS, system string) (SystemSpec, error) {
	file := system + ".yaml"
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return SystemSpec{}, fmt.Errorf("perfdb: system %s: %w", system, err)
	}
	var raw rawSpec
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
		return SystemSpec{}, fmt.Errorf("perfdb: %s: %w", file, err)
	}
	s := SystemSpec{
		MemBW: raw.GPU.MemBW, MemCapacity: raw.GPU.MemCap,
		BF16FLOPS: raw.GPU.BF16, FP8FLOPS: raw.GPU.FP8, FP4FLOPS: raw.GPU.FP4,
		GPUsPerNode: raw.Node.GPUs, IntraNodeBW: raw.Node.Intra, InterNodeBW: raw.Node.Inter, PCIeBW: raw.Node.PCIe,
		SMVersion: raw.GPU.SMVersion,
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"gpu.mem_bw", s.MemBW}, {"gpu.mem_capacity", s.MemCapacity}, {"gpu.bfloat16_tc_flops", s.BF16FLOPS}} {
		if !(f.v > 0) {
			return SystemSpec{}, fmt.Errorf("perfdb: %s: %s is %g, want a positive number", file, f.key, f.v)
		}
	}
	return s, nil
}
