// Package convert turns cluster descriptions written for other simulators
// into servesim scenarios.
//
// # LLMServingSim cluster configs
//
// [LLMServingSim] reads an LLMServingSim cluster config (the JSON passed to
// its --cluster-config flag; schema in its docs/docs/reference/cluster-config.md)
// and returns an equivalent scenario YAML that config.Parse accepts. The
// mapping, with units:
//
//	LLMServingSim                          servesim
//	instances[].model_name                 model (one model per scenario)
//	instances[].hardware                   hardware, instances[].hardware (catalog name; aliases accepted)
//	instances[].npu_mem.mem_size  (GB)     instances[].memory_gb (GB = 1e9 bytes)
//	instances[].npu_mem.mem_util           instances[].engine.gpu_memory_utilization
//	instances[].tp_size / num_npus         instances[].tp (num_npus / pp_size when tp_size is absent)
//	instances[].pp_size                    instances[].pp (omitted when 1)
//	instances[].pd_type                    instances[].role (null: mixed)
//	instances[].max_num_seqs ...           instances[].engine.* (per-instance runtime overrides)
//	instances[].dtype                      dtype (bfloat16: bf16, float16: fp16)
//	link_bw       (GiB/s)                  links.bandwidth_gbps (GB/s, x 1.073741824)
//	link_latency  (ns)                     links.latency_us (/ 1000)
//
// Identical instances, across all nodes, become one instance group with a
// count: the number of LLMServingSim instances, each of tp x pp GPUs.
// Engine-wide settings and the workload are LLMServingSim command-line
// flags, not part of the cluster config, so the scenario keeps servesim's
// defaults for them (see [Options] to pick the trace).
//
// Pipeline parallelism (pp_size p > 1) maps to the group's pp: servesim
// splits the layers into p stages of tp GPUs, each GPU holding 1/(tp·p)
// of the weights and the KV of its stage, keeps up to p batches in flight
// and sends activations from stage to stage over the instance's link.
//
// Parallelism servesim has no engine for is approximated so the converted
// cluster still runs, with the same number of GPUs, and every
// approximation is written into the YAML header:
//
//   - data-parallel groups (dp_group) of an MoE model whose experts are
//     spread over the whole group (ep_size = members x tp_size, mixed
//     role, no pipeline parallelism) become one instance with dp and ep:
//     lockstep DP ranks with sharded experts, as vLLM runs them
//     (docs/moe.md). Other dp_groups: the members become independent
//     instances behind the router; the wave synchronisation is not
//     modelled.
//   - expert parallelism (ep_size) otherwise: within a tensor-parallel
//     group it is simulated as tensor-parallel sharding of the experts
//     (same weight memory per GPU, no all-to-all); spread over a pipelined
//     dp_group, each member holds all experts of its pipeline stage
//     sharded by its tp only (more weight memory and a smaller KV cache
//     than the real deployment); a member whose weights then do not fit is
//     refused.
//
// Features servesim cannot model are refused with an [*UnsupportedError]
// naming each offending section: power models (nodes[].power), PIM
// (cpu_mem.pim_config, enable_attn_offloading, enable_sub_batch_interleaving),
// CXL memory (cxl_mem, placement on cxl:N), weight or KV placement in CPU
// memory (placement, enable_local_offloading), a KV cache dtype other than
// the weights', and dp_group members holding every expert (above) whose
// weights do not fit. Documented keys with no effect on servesim (cpu_mem,
// collective_links, cudagraph, reserve_full_isl, kv_evict_loc cpu) are
// accepted with a note; unknown keys are errors naming their path.
package convert
