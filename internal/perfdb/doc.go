// Package perfdb reads a per-op GPU performance database in the layout of
// NVIDIA AIConfigurator (github.com/ai-dynamo/aiconfigurator, Apache-2.0):
// kernel latencies measured on real systems, per serving framework and
// version, one parquet table per op family.
//
// # Layout
//
// The file system given to Open is rooted at AIConfigurator's `systems`
// folder:
//
//	<system>.yaml                                   the system's specs
//	data/<system>/<op>/<framework>/<version>/*.parquet
//	data/<system>/<op>/<framework>/<version>/reuse.yaml   (optional)
//	data/<system>/comm/nccl/<nccl version>/nccl_perf.parquet
//
// Open reads one system, framework and version: the GEMM table
// (gemm/gemm_perf), context and generation attention
// (attention/context_attention_perf, attention/generation_attention_perf),
// vLLM's custom all-reduce (comm/custom_allreduce_perf), NCCL collectives
// (comm/nccl, newest NCCL version present) and the fused MoE block
// (moe/moe_perf). A table whose folder lacks the requested version is read
// from the nearest measured version (the newest older one, else the oldest
// newer one); a reuse.yaml naming a donor version for the table is
// honoured. DB.Tables records the file and version every table came from.
//
// # Units and meaning
//
// Latencies are milliseconds, as stored. A GEMM row times (M×K)·(K×N).
// Attention rows give per-GPU query and KV heads; a context row is the
// prefill of Seq tokens in each of Batch sequences from an empty KV cache,
// a generation row one decode token in each of Batch sequences with Seq
// tokens of context. Collective rows give the message size in elements of
// their dtype. MoE rows time the whole fused MoE block of one rank.
//
// Embedded returns the copy compiled into servesim (the vLLM tables of the
// systems listed by EmbeddedSystems, with the licence notice beside them).
//
// GEMMHoldout and GEMMHoldoutAcross predict the GEMM table's own rows
// without them by each rule of GEMMRules, the measurement the GEMM
// interpolation rule of Kernels was chosen by.
//
// Errors name the file and, for a malformed table, the column; nothing
// here panics on bad data.
package perfdb
