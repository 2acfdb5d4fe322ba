// Package assemble turns a validated scenario (package config) into a
// runnable simulation: it resolves names (model, hardware, profile bundle,
// calibration, builtin traces) against the embedded catalogs or the
// user's directories, sizes every instance's KV cache, builds the
// step-latency predictors, the handoff configuration and the workload
// opener. A group with engine.speculative gets its proposer (spec.go): a
// draft model's or an EAGLE/MTP head's predictor, weights and KV in the
// memory budget and the handoff size, or n-gram lookups on the host.
//
// A Built scenario is immutable: every call to NewSim creates fresh
// engines, router state and workload source, so one Built can be run any
// number of times with byte-identical results.
package assemble
