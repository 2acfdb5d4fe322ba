// Package model describes a transformer's architecture as read from its
// HuggingFace config.json, and derives the sizes the simulator needs from it:
// parameter count, weight bytes and KV-cache bytes per token.
//
// # Vocabulary
//
//   - hidden size h, intermediate size i, layers L, attention heads H,
//     KV heads K (grouped-query attention; K = H without GQA), head dim d
//     (explicit head_dim, else h/H), vocabulary V.
//   - MoE: E routed experts per MoE layer (num_experts or
//     num_local_experts), k experts per token (num_experts_per_tok), expert
//     intermediate size i_e (moe_intermediate_size, else intermediate_size
//     as in Mixtral and PhiMoE), optional shared experts.
//
// # Contracts
//
// [Parse] is lenient about JSON fields it does not know (real configs carry
// dozens) and strict about the ones it needs: each required field must be
// present and > 0, and the error names the source and the JSON field.
// Nothing here panics on bad input.
//
// Which model_types a scenario may use is one table, [Architectures]
// (arch.go): per type, the layer catalog that times it and the structure
// its config.json leaves implicit (Qwen2's q/k/v biases, OLMo's norms).
// [Parse] accepts any type, so a directory can be listed; a run asks
// [Config.Architecture], which refuses an unknown type with the list of
// supported ones, and [Config.CheckSlidingWindow], which refuses a
// sliding window the simulator does not model but the context would use.
//
// [Load] and [List] read a model directory laid out as <org>/<name>.json,
// for example the embedded catalog returned by [Builtin] or a user directory
// (os.DirFS) given with --models DIR. A file system that has a top-level
// "models" directory (such as assets.FS()) is searched inside it.
//
// Byte counts are for a single copy of the whole model unless a method says
// "PerRank". Parameter counts follow the HuggingFace module layout and
// ignore tiny terms the configs do not describe precisely (norm biases,
// rotary buffers); they agree with the published totals within well under
// 1 %.
package model
