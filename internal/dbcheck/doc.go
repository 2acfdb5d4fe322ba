// Package dbcheck sets a per-op GPU performance database (package perfdb)
// beside servesim's other knowledge of the same GPU:
//
//   - Crosscheck compares the database with a profile bundle's step tables
//     (package perf), op by op: the linear layers' GEMMs, lm_head,
//     attention and the MoE block, each database time composed exactly as
//     the measured-kernel predictor (perf.Measured) composes it, with the
//     shapes the roofline derives for the model (perf.Roofline's
//     LinearShape and AttentionShape).
//   - Collectives lists a tensor-parallel all-reduce by message size:
//     the database's measured vLLM custom all-reduce and NCCL rows beside
//     servesim's modelled perf.AllReduce on a catalog link.
//   - Inventory lists the systems of a database, the versions present and
//     the tables a run reads, with their row counts.
//   - Steps times the same batches with the calibrated roofline and the
//     perfdb predictor, each built as a run builds an instance, per
//     deployment (accelerator, model, weight format, tp), with the
//     collectives' part of each (perf.StepCommNs).
//   - GEMMHoldout predicts the database's own GEMM rows without them by
//     each rule a GEMM between two measured m can be read with
//     (perfdb.GEMMRules) and summarises the errors per m range.
//
// Differences are database / profile − 1 per row; a row whose shape lies
// outside the database's tables (where the predictor falls back to the
// roofline) is counted, not compared.
package dbcheck
