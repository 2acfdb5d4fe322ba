// Package perf predicts how long one engine step takes.
//
// # Contract
//
// The engine describes each step as a Batch and asks a Predictor for its
// duration in integer nanoseconds. StepTime must be deterministic, must not
// allocate, and must not keep the Batch. An empty batch takes 0 ns. Garbage
// input (negative counts) never panics; it is clamped.
//
// # Vocabulary
//
//   - step: one forward pass of the model over the batch the scheduler formed.
//   - pc (Batch.PrefillTokens): query tokens of the prompt chunks computed this
//     step, summed over the prefilling requests.
//   - kp (Batch.PrefillKV): tokens already in those requests' KV cache before
//     this step's chunk (earlier chunks plus prefix-cache hits), summed. This
//     is attention.csv's kv_prefill in the bundles shipped with servesim
//     (profiled with one prefill per shot; the reference simulator feeds it
//     the sum of the prefills' histories).
//   - n (Batch.NumDecode): requests decoding one token this step.
//   - kvd: a decode request's context length (tokens already in KV, excluding
//     the token computed this step). The tables are indexed by the batch's
//     integer mean kvd = DecodeKVSum / NumDecode; DecodeKVMax and DecodeKVMin
//     drive the skew correction.
//   - tokens = pc + n (dense ops); sequences = prefilling + decoding requests
//     (lm_head and sampler produce one row of logits per request).
//   - Batch.SpecTokens: with speculative decoding, the proposals the decode
//     requests verify. They add to the tokens, to the rows of logits
//     (Batch.Rows) and to each decode's attention query in the roofline;
//     the profile's attention table has no query-length axis and uses the
//     decode contexts only (docs/speculative.md). HeadTime prices an
//     EAGLE/MTP head; SpecCaptureSizes scales the CUDA-graph sizes.
//
// # The profile predictor
//
// A profile bundle (see FindBundle) holds per-op latency tables measured on
// one GPU with vLLM, in microseconds for ONE transformer layer. A layer
// catalog (LoadCatalog) orders the ops of a step:
//
//	step = prologue (embedding, once)
//	     + NumLayers x (pre_attn + post_attn + mlp_dense or mlp_moe)
//	     + head (final_layernorm, lm_head, sampler: once)
//
// Each occurrence of an op is charged (layernorm runs twice per layer). The
// table an op is read from is its catalog category:
//
//   - dense.csv: linear in tokens. All dense ops of a step, with their
//     multiplicities, are summed into one piecewise-linear function at load
//     time (exact, on the union of their grids), so a step costs one lookup.
//   - per_sequence.csv: linear in sequences; lm_head and sampler are merged
//     the same way.
//   - attention.csv: 4-D. The two corners bracketing pc, and inside each the
//     two corners bracketing n (each pc has its own n grid), are looked up
//     bilinearly in (kp, kvd) on the corner's own grid, then blended
//     linearly in n and in pc. Ragged corners (kp rows measured on different
//     kvd grids) are completed at load time by interpolation along the row,
//     else the column (see denseSlice). Pure-prefill steps (n = 0) blend only
//     the corners measured with n = 0; pure-decode steps use the pc = 0
//     corners; mixed steps with pc below the first chunk blend the pure
//     decode corner with it.
//   - moe.csv: the MoE block by (tokens, activated experts), linear in both;
//     activated experts = ActivatedExperts(tokens, NumExperts, ExpertsPerTok)
//     (uniform-routing expectation E(1-(1-k/E)^T), rounded). tp1/moe.csv is
//     the block of one expert-parallel rank (its experts whole) and is what
//     MoELayerNs reads at every tp. Tensor-parallel MoE (ep = 1, every
//     expert sharded over the tp ranks) reads tp<N>/moe.csv when the bundle
//     has one, else tp1's table divided by N (docs/moe.md).
//
// Every axis clamps below its first sample and extrapolates linearly above
// its last from the top two samples; interpolation is linear (not log) in
// every axis, as in the reference simulator.
//
// Lookups are exact shortcuts of that definition, never approximations:
// each axis has a guide (guide.go) that starts the search in the right
// octave bucket instead of bisecting; the dense and per-sequence sums are
// memoised by whole count; the skew correction's two attention lookups
// share every axis position but kvd's (attnTable.at2). See
// docs/performance.md, "Step-time predictors".
//
// The per-run copies (ForRun) add memos of their own, each bounded and
// holding exactly what the general path computes: the Profile's keeps,
// for every decode count below decodePlanLimit (1,024) it meets, a plan
// of the positions a decode-only step shares with every step of that
// count, the dense, per-sequence and MoE terms at the latest padding,
// the kvd interval of the latest mean and longest context with the
// operands interpolation reads there, the latest skew buckets with the
// (mean − min, max − min) they were found for, and the latest mean
// context with its sum and count (a step whose every context grew by a
// token has the mean one more, without dividing); the
// Roofline's keeps, per decode count (modulo 256), the split-KV count
// and the other terms of the latest blocks per unit of its two
// pure-decode attention lookups (for the fast step, with the lookup's
// times as lines in the context sum, roofline_line.go) and, for a dense
// model, the sum of the op times but attention's at the latest step's
// counts. WithEngineTime holds, immutable, the
// padding, gaps, host and launch times of plain decode steps of fewer
// than decodeShapeLimit (1,024) decodes.
//
// Skew correction: decode contexts in one batch differ, and the kernel pays
// for the longest more than the mean suggests. Per layer,
//
//	t = t_mean + alpha * (t_max - t_mean)
//
// where t_mean is the attention lookup at the mean kvd and t_max at
// DecodeKVMax. alpha comes from skew_fit.csv, bucketed by (pc, n, skew rate,
// kv_big = DecodeKVMax, kp) with the bins and labels of meta.yaml
// skew_fit.bucket_axes, right-inclusive; skew rate = (mean - min)/(max -
// min) clamped to [0, 1]. The pc key must equal a profiled pc value exactly;
// a missing bucket uses meta.yaml per_tp[tp].alpha_default. alpha is 0 when
// the bundle has no skew fit (skew_fit.enabled false, no entry for the tp,
// or no skew_fit.csv), and no correction applies when n <= 1, when
// DecodeKVMax <= mean, or when t_max <= t_mean.
//
// The tables hold kernel durations only (measured eagerly): no launch
// gaps, no host work, no kernels outside the catalogued modules.
//
// # Around the tables
//
// Decorators turn table time into engine step time, in this order (see
// docs/engine-time.md):
//
//   - WithCollectives adds tensor-parallel all-reduces and the logits
//     all-gather, timed as vLLM 0.19 issues them (NewAllReduce: custom
//     all-reduce or NCCL by world size, peer-to-peer and message size).
//   - WithEngineTime applies vLLM's CUDA-graph dispatch: a graph step is
//     padded to its capture size (Batch.PadTokens: dense ops and
//     all-reduces run on the padded tokens, attention and per-sequence ops
//     on the real ones), pays the kernel gaps of its mode (full, piecewise
//     or eager) and the once-per-step kernels no table measures, and
//     overlaps the host time under async scheduling.
//   - WithOverhead adds an optional fixed cost per step (0 by default).
//
// WithFormatScaling, when the scenario asks for it, sits below
// WithCollectives: it scales a bundle's kernel time to a weight or
// KV-cache format the bundle was not measured in, by the ratio of two
// rooflines (docs/quantization.md).
//
// A decorator may set Batch.PadTokens on the caller's batch for the
// duration of the inner call; it restores it before returning.
//
// # Frontier attention in the roofline
//
// RooflineModel.RooflineFrontier (roofline_frontier.go) adds multi-head
// latent attention (the attention op is then MLA's expanded form for
// prefill tokens and absorbed form for decodes, MLACost; qkv_proj and
// o_proj are MLA's projections), window-bounded layers (their attention is
// the separate op attention_local, the full model at contexts clipped to
// the sliding window or the attention chunk) and the dense layers of an
// MoE model (gate_up_proj, act_fn and down_proj on those layers, moe on
// the rest). The measured-kernel predictor times all three with the
// roofline and counts MLA attention as a table fallback (docs/attention.md).
package perf
