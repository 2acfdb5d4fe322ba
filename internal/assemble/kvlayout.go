package assemble

import (
	"fmt"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/model"
)

// hybridLayout is vLLM's hybrid KV cache layout of a model with
// window-bounded layers (sliding window or chunked local attention) on one
// GPU of a tp x pp instance: each pipeline stage holds ⌈layers/pp⌉ of each
// kind, a page is one block of one layer's KV on the GPU. ok is false for a
// model whose layers are all full attention.
func hybridLayout(m *model.Config, eng config.Engine, tp, pp, kvBytes int) (kv.Hybrid, bool) {
	kind := model.AttnSliding
	if m.NumLayersOfKind(kind) == 0 {
		kind = model.AttnChunked
	}
	local, full := m.NumLayersOfKind(kind), m.NumLayersOfKind(model.AttnFull)
	if local == 0 || full == 0 {
		return kv.Hybrid{}, false
	}
	pp = max(pp, 1)
	return kv.Hybrid{
		FullLayers: (full + pp - 1) / pp, LocalLayers: (local + pp - 1) / pp,
		Window: int(m.Window(kind)), Chunked: kind == model.AttnChunked,
		PageBytes: int64(eng.BlockSize) * m.KVElemsPerTokenLayer(tp) * int64(kvBytes),
		BlockSize: eng.BlockSize, MaxSeqs: eng.MaxNumSeqs,
	}, true
}

// hybridManager reports whether vLLM's hybrid KV cache manager runs:
// engine.disable_hybrid_kv_cache_manager when set, else vLLM 0.19's
// default, off with a KV connector (VllmConfig.__post_init__ disables it
// whenever kv_transfer_config is set; NixlConnector supports it from
// 0.19 when asked with --no-disable-hybrid-kv-cache-manager, and the
// default became opt-out only after 0.19). A P/D scenario's instances and
// kv_tiers' offloading run with a connector. vLLM also turns it off for
// chunked local attention with an EAGLE-style proposer (eagle, eagle3,
// mtp: SpeculativeConfig.use_eagle), whatever the flag says.
// When it is off, why says why.
func hybridManager(s *config.Scenario, eng config.Engine, chunked bool) (on bool, why string) {
	if sp := eng.Speculative; chunked && sp != nil && (sp.Method == config.SpecEagle || sp.Method == config.SpecEagle3 || sp.Method == config.SpecMTP) {
		return false, "chunked local attention with an EAGLE-style proposer"
	}
	if d := eng.DisableHybridKVCacheManager; d != nil {
		return !*d, "engine.disable_hybrid_kv_cache_manager"
	}
	if s.PD() || s.KVTiers != nil {
		return false, "vLLM 0.19's default with a KV connector (P/D, kv_tiers)"
	}
	return true, ""
}

// hybridOn is hybridManager's answer without its reason.
func hybridOn(s *config.Scenario, eng config.Engine, chunked bool) bool {
	on, _ := hybridManager(s, eng, chunked)
	return on
}

// chunkedLocal reports whether m has chunked local attention layers.
func chunkedLocal(m *model.Config) bool { return m.NumLayersOfKind(model.AttnChunked) > 0 }

// kvLayout describes an MLA model's KV cache: one latent per token and
// layer, the same on every tensor-parallel rank.
func kvLayout(m *model.Config, tp, pp, kvBytes int) string {
	if !m.IsMLA() {
		return ""
	}
	return fmt.Sprintf("MLA latent, %d + %d elements x %d B per token per layer (%d B per token on every tp rank)",
		m.KVLoraRank, m.QKRopeHeadDim, kvBytes, kvPerTokenPerGPU(m, kvBytes, tp, pp))
}
