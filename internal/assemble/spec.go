package assemble

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/quant"
	"github.com/servesim/servesim/internal/workload"
)

// Speculative decoding: the proposer of an instance group, what it costs
// and the memory it takes (see docs/speculative.md).

// NgramHostNsPerToken is the host time charged per n-gram proposal: 0.
// vLLM's n-gram proposer (vllm/v1/spec_decode/ngram_proposer.py) finds
// the longest suffix match in the request's own token ids with a
// numba-compiled KMP scan, one pass over the context, requests spread
// over CPU threads: on the order of a nanosecond per context token, so
// about 1 to 2 µs per request of 1,000 to 2,000 tokens, below the host
// model's 3 µs per sequence and step (perf.HostPerSeqNs). This is an
// estimate, not a measurement; long contexts at large batches would cost
// more than the model charges.
const NgramHostNsPerToken = 0

// specBuild is a group's resolved speculative decoding.
type specBuild struct {
	cfg        engine.Speculative
	weights    int64  // proposer weights per GPU, bytes
	kvPerToken int64  // proposer KV per token per GPU, bytes
	desc       string // the method and how its cost is priced
}

// buildSpec resolves the group's engine.speculative (path names it in
// errors) for target model m on acc at tensor-parallel degree tp. et is
// the target's engine-time model; the proposer's passes get the same CUDA
// graphs and kernel gaps but no host time of their own (the step's host
// time is the target's).
//
// target is the target's GPU-time predictor (before collectives and engine
// time): when it is a measured profile, an EAGLE/MTP head takes its
// attention from the target's per-layer table (perf.HeadTime).
func buildSpec(s *config.Scenario, src config.Source, profiles fs.FS, path string, sp *config.Speculative, m *model.Config,
	acc hw.Accelerator, tp, bpe int, qf quant.Format, eng config.Engine, et perf.EngineTime, target perf.Predictor) (specBuild, error) {
	b, note, err := proposer(s, src, profiles, path, sp, m, acc, tp, bpe, qf, eng, et, target)
	if err == nil && note != "" {
		b.desc += "; " + note
	}
	return b, err
}

// proposer is buildSpec but for the note on a default acceptance, which
// it returns beside the build ("" when the scenario sets the acceptance).
func proposer(s *config.Scenario, src config.Source, profiles fs.FS, path string, sp *config.Speculative, m *model.Config,
	acc hw.Accelerator, tp, bpe int, qf quant.Format, eng config.Engine, et perf.EngineTime, target perf.Predictor) (b specBuild, note string, err error) {
	k := sp.NumSpeculativeTokens
	b = specBuild{cfg: engine.Speculative{K: k, Seed: s.Seed}}
	if note, err = acceptance(&b.cfg, sp, k, path); err != nil {
		return b, "", err
	}
	var draft *model.Config
	var cat *perf.Catalog
	switch sp.Method {
	case config.SpecNgram:
		b.cfg.HostNsPerToken = NgramHostNsPerToken
		b.desc = fmt.Sprintf("ngram, k=%d: proposals on the host (no GPU draft)", k)
		return b, note, nil
	case config.SpecDraftModel:
		if draft, err = loadDraft(s, src, sp.DraftModel); err != nil {
			return b, "", fmt.Errorf("%s.draft_model: %w", path, err)
		}
		if draft.VocabSize != m.VocabSize {
			return b, "", fmt.Errorf("%s.draft_model: %s has a vocabulary of %d tokens, %s of %d; a draft model must share the target's tokenizer", path, draft.Name, draft.VocabSize, m.Name, m.VocabSize)
		}
		if cat, err = layerCatalog(draft); err != nil {
			return b, "", fmt.Errorf("%s.draft_model: %w", path, err)
		}
		maxLen := int64(eng.MaxModelLen)
		if maxLen == 0 {
			maxLen = m.MaxPositionEmbeddings
		}
		if err = draft.CheckSlidingWindow(maxLen); err != nil {
			return b, "", fmt.Errorf("%s.draft_model: %w", path, err)
		}
		b.weights = weightsPerGPU(draft, tp, 1, 1, bpe, qf.WeightBytes()) + draft.RotaryCacheBytes(bpe)
	default: // eagle, eagle3, mtp: one decoder layer of the target's shape + lm_head
		head := *m
		head.Name = m.Name + " " + string(sp.Method) + " head"
		head.NumLayers, head.FirstDenseLayers, head.MLPOnlyLayers, head.DecoderSparseStep = 1, 0, nil, 0
		// Its one layer attends fully (a hybrid target's window kinds
		// are the target's layers', not the head's).
		head.LayerKinds = nil
		draft = &head
		if cat, err = layerCatalog(m); err != nil {
			return b, "", fmt.Errorf("%s: %w", path, err)
		}
		// The head shares the target's token embeddings; its own lm_head
		// is counted (EAGLE-3 heads and MTP modules carry one).
		shared := head.VocabSize * head.HiddenSize * int64(bpe)
		b.weights = (head.QuantizedWeightBytes(bpe, qf.WeightBytes()) - shared) / int64(tp)
	}
	b.kvPerToken = kvPerTokenPerGPU(draft, qf.KVBytes(), tp, 1)

	var base perf.Predictor
	source := "roofline"
	if sp.Method == config.SpecDraftModel && s.Predictor.Kind == config.PredictorProfile {
		want := s.Dtype
		if !qf.Off() {
			want = qf.Variant()
		}
		if _, ferr := perf.FindBundle(profiles, acc.Name, draft.Name, want, tp); ferr == nil {
			arch := perf.Arch{ModelType: cat.ModelType, NumLayers: int(draft.NumLayers), NumExperts: int(draft.NumExperts), ExpertsPerTok: int(draft.ExpertsPerTok)}
			if base, _, err = profile(s, src, profiles, draft, acc, tp, arch, cat, qf); err != nil {
				return b, "", fmt.Errorf("%s.draft_model: %w", path, err)
			}
			source = fmt.Sprintf("profile %s/%s/%s/tp%d", acc.Name, draft.Name, want, tp)
		}
	}
	if base == nil {
		if base, err = roofline(s, src, draft, acc, tp, qf); err != nil {
			return b, "", fmt.Errorf("%s: %w", path, err)
		}
		roof, isRoof := base.(*perf.Roofline)
		prof, isProf := target.(*perf.Profile)
		if sp.Method != config.SpecDraftModel && isRoof && isProf {
			base = perf.HeadTime(roof, prof)
			source = "roofline, attention from the target's measured per-layer table"
		}
	}
	dt := et
	perLayer, attn, perStep := cat.Kernels(draft.NumExperts > 0)
	dt.Layers, dt.LayerKernels, dt.AttnKernels, dt.StepKernels = int(draft.NumLayers), perLayer, attn, perStep+perf.StepKernels
	dt.Host, dt.Async, dt.StepKernelNs = perf.HostTime{}, false, 0
	if mk, ok := base.(interface{ MinKernelNs() float64 }); ok {
		dt.StepKernelNs = mk.MinKernelNs()
	}
	tc, err := calibratedComm(s, src, acc, tpComm(draft, acc, tp, bpe, s.Links, eng))
	if err != nil {
		return b, "", err
	}
	tc.Scale = s.Predictor.CollectiveScale
	b.cfg.Draft = perf.WithEngineTime(perf.WithCollectives(base, tc), dt)
	what := draft.Name
	if sp.Method != config.SpecDraftModel {
		what = "one-layer head of the target's shape"
	}
	b.desc = fmt.Sprintf("%s, k=%d: %s priced by the %s, KV in the same pool", sp.Method, k, what, source)
	return b, note, nil
}

// acceptance sets cfg's acceptance from sp: its rate, per-position rates
// or per-request trace rates, else the method's default, whose
// description it returns (config.DefaultAcceptanceNote; "" otherwise).
func acceptance(cfg *engine.Speculative, sp *config.Speculative, k int, path string) (note string, err error) {
	switch {
	case sp.AcceptanceRate != nil:
		cfg.Accept = engine.Rates(engine.IIDAcceptance(*sp.AcceptanceRate, k))
	case sp.AcceptancePerPosition != nil:
		cfg.Accept = engine.Rates(sp.AcceptancePerPosition)
	case sp.Acceptance == config.AcceptanceTrace:
		cfg.PerRequest = true
	default:
		rates, source, ok := config.DefaultAcceptance(sp.Method, k)
		if !ok {
			return "", fmt.Errorf("%s: method %s has no default acceptance; set acceptance_rate or acceptance_per_position", path, sp.Method)
		}
		cfg.Accept = engine.Rates(rates)
		note = config.DefaultAcceptanceNote(rates, source)
	}
	return note, nil
}

// loadDraft loads a draft model by name: from the scenario's models
// folder, then the embedded catalog.
func loadDraft(s *config.Scenario, src config.Source, name string) (*model.Config, error) {
	if s.Models != "" {
		if m, err := model.Load(os.DirFS(resolve(src, s.Models)), name); err == nil {
			return m, nil
		} else if !errors.Is(err, model.ErrUnknownModel) {
			return nil, err
		}
	}
	return model.Load(model.Builtin(), name)
}

// specPath names where group gi's speculative settings come from.
func specPath(s *config.Scenario, gi int) string {
	if e := s.Instances[gi].Engine; e != nil && e.Speculative != nil {
		return fmt.Sprintf("instances[%d].engine.speculative", gi)
	}
	return "engine.speculative"
}

// requireAcceptance makes the trace reader demand spec_acceptance_rate on
// every request when a group takes speculative acceptance from the trace;
// such a scenario needs a trace workload.
func requireAcceptance(s *config.Scenario, open func() (workload.Source, io.Closer, error)) (func() (workload.Source, io.Closer, error), error) {
	path := ""
	for gi := range s.Instances {
		if sp := s.Instances[gi].Merged(s.Engine).Speculative; sp != nil && sp.Acceptance == config.AcceptanceTrace {
			path = specPath(s, gi)
			break
		}
	}
	if path == "" {
		return open, nil
	}
	if s.Workload.Trace == "" {
		return nil, fmt.Errorf("%s.acceptance: trace takes each request's acceptance rate from the workload trace's spec_acceptance_rate, but the workload is not a trace; use workload.trace or set acceptance_rate", path)
	}
	return func() (workload.Source, io.Closer, error) {
		src, c, err := open()
		if err != nil {
			return nil, nil, err
		}
		if !workload.RequireSpecAcceptance(src) {
			c.Close()
			return nil, nil, fmt.Errorf("%s.acceptance: trace needs the workload read from a trace file", path)
		}
		return src, c, nil
	}, nil
}
