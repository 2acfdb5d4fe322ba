// Package calibrate fits the roofline step-latency model (perf.Roofline) to
// measured profile tables, so that one accelerator's calibration predicts
// any model on it.
//
// # What is fitted
//
// perf.Efficiency: the fraction of peak FLOP/s and bandwidth GEMMs and
// streaming kernels reach, the fixed cost per kernel, the blend of the
// compute and memory limits, an on-chip cache model, per-op traffic
// multipliers of the memory-bound ops, and the attention kernel's constants
// (tile height, wave width, per-unit and launch costs, cache reuse). These
// describe an accelerator and its serving engine's kernels, not a model:
// one set is fitted per accelerator and applies to every model on it.
//
// # How
//
// Fit takes every row of a bundle's dense.csv, per_sequence.csv and
// attention.csv (perf.ReadPoints) and minimises the sum over rows of a
// robust (soft-L1) loss of log(predicted/measured), each table group
// weighing the same. The dense and attention parameters are independent
// and fitted apart with a Nelder-Mead simplex; the attention tile height
// and wave width are integers, searched on a grid. Fit is deterministic.
//
// # Per-op performance databases
//
// FitPerfDB fits the same efficiencies on a per-op database (package
// perfdb: NVIDIA AIConfigurator's measured GEMM and attention kernels):
// the GEMM fields on bf16 GEMM rows, the attention fields on context and
// generation attention rows, each row evaluated by the roofline's own op
// model at its shape (PerfDBInput). What the database cannot inform is
// kept from another calibration and the entry says so (Entry.Kept);
// CheckPerfDB reports the error per table.
//
// # Files
//
// Write and Load read and write a small YAML file holding one Entry per
// accelerator (times in microseconds, caches in MB); File.Lookup returns
// the perf.Efficiency to pass to perf.NewRoofline.
//
// # Error bands
//
// StepResiduals and NewBand give the 90 % band of the step model's error
// on a deployment's own tables. Where it has none, TransferBand (a lent
// calibration, on other accelerators' tables) and CrossModelBand (the
// accelerator's own calibration, on its tables of other models) give a
// labelled band instead; LeaveOneAccelerator and LeaveOneModel check
// their coverage on what they were not taken from.
package calibrate
