// Package hw is the accelerator catalog: per GPU model, device memory size
// and bandwidth, peak dense tensor throughput, the GPU-to-GPU link inside a
// node, the NIC used for inter-instance KV transfer, and the node's host
// memory and host-device bandwidth.
//
// # Data and units
//
// The built-in entries live in catalog.yaml (embedded), each citing its
// public spec sheet. The YAML uses the units of spec sheets (memory_gb,
// mem_bw_gbps in GB/s, tflops_bf16, NIC bw_gbit in Gb/s, ...; see the
// header of catalog.yaml); [Accelerator] holds SI units: bytes, bytes/s,
// FLOP/s and integer nanoseconds.
//
// GB versus GiB: spec sheets print capacities in "GB", but the DRAM is
// binary (96 GB of GDDR7 is 96 GiB = 103.08e9 bytes) and CUDA reports a
// total a little under that (the driver keeps the rest). The built-in
// entries therefore give memory_gib (2^30 bytes): the CUDA-visible total
// where a public log states it, else the spec-sheet figure read as GiB;
// vLLM sizes its KV cache from that total. memory_gb (1e9 bytes) remains
// accepted for user entries. Bandwidths are decimal as printed (1597 GB/s =
// 1.597e12 bytes/s).
//
// # Catalogs
//
// A [Catalog] is an immutable set of accelerators. [Default] builds the
// built-in one once, from the entries of the embedded file as Go values
// (specs_gen.go, made by go generate ./internal/hw; the file is parsed
// instead when it no longer matches them); [Catalog.Extend] returns a new catalog with the
// entries of a user YAML added or overriding (by name), so there is no
// mutable global state. Decoding is strict: an unknown field is an error
// with its line:column. An override entry that names an existing
// accelerator changes only the fields it gives; "base: NAME" starts a new
// entry as a copy of NAME. Every size must be > 0 (tflops_fp8 and tflops_fp4 may be 0:
// no FP8 or FP4 tensor cores; latencies may be 0).
//
// A scenario's own accelerators arrive as [Spec] values (the YAML form of
// an entry, decoded with the scenario) and join a catalog through
// [Catalog.With], which names each field in errors by a caller-given
// position or path. An entry may name the calibrated accelerator whose
// roofline efficiencies it borrows (calibration_from; the calibration
// package picks the nearest calibrated architecture otherwise). Links are
// nvlink, xgmi (AMD Infinity Fabric; like NVLink, every GPU reaches every
// other: [Link.FullyConnected]) or pcie.
//
// Names are matched case-insensitively and ignoring spaces and punctuation,
// against each entry's name and aliases ("rtx pro 6000" finds
// RTXPRO6000). An unknown name yields an error wrapping
// [ErrUnknownAccelerator] that lists the nearest names.
package hw
