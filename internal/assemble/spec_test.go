package assemble

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/perf"
)

// TestSpecMemory: the proposer's KV joins the target's in every block and
// the handoff, and its weights leave less room for blocks. Hand
// computation for Llama-3.1-8B in bf16 (8 KV heads x 128, 2 B):
// target 2 x 32 layers x 1024 x 2 B = 131072 B per token; an EAGLE head
// (one layer) adds 4096 B. Llama-3.1-70B at tp 4 (80 layers, 2 KV heads
// per GPU): 81920 B; a Llama-3.1-8B draft at tp 4 adds 2 x 32 x 2 x 128
// x 2 = 32768 B.
func TestSpecMemory(t *testing.T) {
	tests := []struct {
		name, yaml string
		kv         int64
	}{
		{"eagle", "model: meta-llama/Llama-3.1-8B\nengine: {speculative: {method: eagle, num_speculative_tokens: 3, acceptance_rate: 0.7}}\n", 131072 + 4096},
		{"mtp", "model: meta-llama/Llama-3.1-8B\nengine: {speculative: {method: mtp, num_speculative_tokens: 1, acceptance_rate: 0.8}}\n", 131072 + 4096},
		{"ngram", "model: meta-llama/Llama-3.1-8B\nengine: {speculative: {method: ngram, num_speculative_tokens: 4, acceptance_rate: 0.3}}\n", 131072},
		{"draft model", "model: meta-llama/Llama-3.1-70B\ninstances: [{tp: 4}]\nengine: {speculative: {method: draft_model, draft_model: meta-llama/Llama-3.1-8B, num_speculative_tokens: 4, acceptance_rate: 0.6}}\n", 81920 + 32768},
	}
	const base = "predictor: {kind: roofline}\nhardware: H100\n"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			on, err := buildYAML(t, base+tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			off, err := buildYAML(t, base+strings.Split(tc.yaml, "engine:")[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := on.instances[0].kvPerToken; got != tc.kv {
				t.Errorf("%d KV bytes per token per GPU, want %d", got, tc.kv)
			}
			bOn, bOff := on.instances[0].NumBlocks, off.instances[0].NumBlocks
			if tc.name == "ngram" {
				if bOn != bOff {
					t.Errorf("n-gram: %d blocks, %d without speculation; want equal (no GPU proposer)", bOn, bOff)
				}
				return
			}
			// Fewer blocks than the KV ratio alone gives: the proposer's
			// weights take memory too.
			if ratio := float64(bOff) * float64(off.instances[0].kvPerToken) / float64(tc.kv); float64(bOn) >= ratio {
				t.Errorf("%d blocks with the proposer, want fewer than %.0f (KV ratio alone)", bOn, ratio)
			}
		})
	}
}

// TestSpecCaptureSizes: the capture sizes of a speculating instance are
// multiples of 1+k up to min(2 x max_num_seqs x (1+k), 512, budget).
func TestSpecCaptureSizes(t *testing.T) {
	tests := []struct {
		seqs, tokens, k int
		sizes           []int
		want            []int
	}{
		{4, 2048, 3, nil, []int{4, 8, 16, 24, 32}},                             // limit 2x4x4 = 32: 1,2,4 -> 4; 8..32
		{2, 2048, 2, nil, []int{3, 6, 9}},                                      // limit 12: 1,2 -> 3; 4 -> 6; 8 -> 9; 12 -> 12
		{8, 2048, 4, []int{1, 2, 4, 8}, []int{5}},                              // explicit: limit 8, 10 > 8 dropped
		{8, 2048, 4, []int{1, 2}, nil},                                         // 1+k exceeds every size: eager
		{1, 2048, 1, []int{3, 1, 2}, []int{2}},                                 // sorted first
		{256, 2048, 1, nil, append([]int{2, 4}, every(8, 256, 8, 16, 512)...)}, // 512 cap
	}
	for _, tc := range tests {
		got := perf.SpecCaptureSizes(tc.seqs, tc.tokens, tc.k, tc.sizes)
		if !equalInts(got, tc.want) {
			t.Errorf("SpecCaptureSizes(%d, %d, %d, %v) = %v, want %v", tc.seqs, tc.tokens, tc.k, tc.sizes, got, tc.want)
		}
	}
	b, err := buildYAML(t, "predictor: {kind: roofline}\nhardware: H100\nengine: {max_num_seqs: 4, speculative: {method: eagle, num_speculative_tokens: 3, acceptance_rate: 0.5}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Resolved().Instances[0].Engine.CUDAGraphCaptureSizes; !equalInts(got, []int{4, 8, 16, 24, 32}) {
		t.Errorf("resolved capture sizes %v, want [4 8 16 24 32]", got)
	}
}

// every lists a, a+step1, ... up to 256, then +step2 up to end.
func every(a, switchAt, step1, step2, end int) []int {
	var out []int
	for s := a; s <= end; {
		out = append(out, s)
		if s < switchAt {
			s += step1
		} else {
			s += step2
		}
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSpecProposerCost: the proposer's passes cost what their shapes say:
// an EAGLE head (one layer + lm_head) far less than the target, a draft
// model between a head and the target; the description says which
// predictor prices a draft model.
func TestSpecProposerCost(t *testing.T) {
	const base = "predictor: {kind: roofline}\nhardware: H100\nmodel: meta-llama/Llama-3.1-70B\ninstances: [{tp: 4}]\n"
	build := func(spec string) *Built {
		b, err := buildYAML(t, base+spec)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	decode := perf.Batch{NumDecode: 32, DecodeKVSum: 32 * 2000, DecodeKVMax: 2000, DecodeKVMin: 2000}
	off := build("")
	target := off.instances[0].Predictor.StepTime(&decode)
	head := build("engine: {speculative: {method: eagle, num_speculative_tokens: 1, acceptance_rate: 0.5}}\n").instances[0]
	draft := build("engine: {speculative: {method: draft_model, draft_model: meta-llama/Llama-3.1-8B, num_speculative_tokens: 1, acceptance_rate: 0.5}}\n").instances[0]
	h, d := head.Engine.Spec.Draft.StepTime(&decode), draft.Engine.Spec.Draft.StepTime(&decode)
	if !(h > 0 && h < d && d < target) {
		t.Errorf("one pass: head %d ns, 8B draft %d ns, 70B target %d ns; want 0 < head < draft < target", h, d, target)
	}
	if !strings.Contains(draft.Speculative, "meta-llama/Llama-3.1-8B priced by the roofline") {
		t.Errorf("description %q does not say the roofline prices the draft", draft.Speculative)
	}
	// A draft model with a profile bundle is priced by it.
	b, err := buildYAML(t, "model: meta-llama/Llama-3.1-8B\nengine: {speculative: {method: draft_model, draft_model: meta-llama/Llama-3.1-8B, num_speculative_tokens: 2, acceptance_rate: 0.5}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if d := b.instances[0].Speculative; !strings.Contains(d, "priced by the profile RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1") {
		t.Errorf("description %q does not name the profile bundle", d)
	}
}

// TestSpecErrors: bad speculative settings fail with the field and the fix.
func TestSpecErrors(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(trace, []byte(`{"input_toks": 10, "output_toks": 5, "arrival_time_ns": 0, "spec_acceptance_rate": 0.5}`+"\n"+
		`{"input_toks": 10, "output_toks": 5, "arrival_time_ns": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const sp = "predictor: {kind: roofline}\nhardware: H100\nengine: {speculative: {method: eagle, num_speculative_tokens: 2, "
	tests := []struct{ yaml, want string }{
		{sp + "acceptance_rate: 1}}\n", "engine.speculative.acceptance_rate: must be in [0, 1)"},
		{sp + "acceptance_rate: 0.5, acceptance: trace}}\n", "set at most one of acceptance_rate"},
		{sp + "acceptance_per_position: [0.5, 0.6]}}\n", "engine.speculative.acceptance_per_position[1]: must not exceed the previous rate"},
		{sp + "acceptance_per_position: [0.5]}}\n", "needs one rate per proposed token: 2 entries"},
		{sp + "acceptance: trace}}\nworkload: {synthetic: {requests: 5, arrival: {kind: burst}, input: {kind: fixed, mean: 10}, output: {kind: fixed, mean: 10}}}\n", "engine.speculative.acceptance: trace takes each request's acceptance rate from the workload trace"},
		{"predictor: {kind: roofline}\nhardware: H100\nengine: {speculative: {method: draft_model, num_speculative_tokens: 2, acceptance_rate: 0.5}}\n", "engine.speculative.draft_model: method draft_model needs"},
		{"predictor: {kind: roofline}\nhardware: H100\nengine: {speculative: {method: medusa, num_speculative_tokens: 0, acceptance_rate: 0.5}}\n", "engine.speculative.method: must be draft_model, eagle, eagle3, mtp or ngram"},
		{"predictor: {kind: roofline}\nhardware: H100\nengine: {speculative: {method: draft_model, draft_model: Qwen/Qwen3-32B, num_speculative_tokens: 2, acceptance_rate: 0.5}}\n", "must share the target's tokenizer"},
	}
	for _, tc := range tests {
		s, err := config.Parse([]byte(tc.yaml), "q.yaml")
		if err == nil {
			_, err = Build(s, config.Source{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
	// A trace line without the rate fails with file:line when acceptance
	// comes from the trace.
	s, err := config.Parse([]byte(sp+"acceptance: trace}}\nworkload: {trace: "+trace+"}\n"), "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	src, c, err := b.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if e, err := src.Next(); err != nil || e.Requests[0].SpecAcceptance != 0.5 {
		t.Fatalf("first line: %+v, %v; want α 0.5", e, err)
	}
	if _, err := src.Next(); err == nil || !strings.Contains(err.Error(), trace+":2: spec_acceptance_rate is missing") {
		t.Errorf("second line: error %v, want %s:2: spec_acceptance_rate is missing", err, trace)
	}
}

// TestSpecPDHandoff: in P/D the handoff moves the prefill instance's KV
// bytes per token, so the EAGLE head's KV of the prompt (4096 B per token
// for Llama-3.1-8B, computed by the prefill side's head) travels with the
// target's 131072 B. An n-gram proposer on the decode side alone keeps no
// KV, so the handoff is the target's alone; a mismatched model-based
// proposer is refused before assembly (config.TestPDSpecMismatch).
func TestSpecPDHandoff(t *testing.T) {
	const base = "predictor: {kind: roofline}\nhardware: H100\nmodel: meta-llama/Llama-3.1-8B\n"
	for _, tc := range []struct {
		name, yaml string
		p, d       int64
	}{
		{"eagle on both", "engine: {speculative: {method: eagle, num_speculative_tokens: 3, acceptance_rate: 0.7}}\ninstances: [{name: p, role: prefill}, {name: d, role: decode}]\n", 131072 + 4096, 131072 + 4096},
		{"ngram on decode", "instances: [{name: p, role: prefill}, {name: d, role: decode, engine: {speculative: {method: ngram, num_speculative_tokens: 3, acceptance_rate: 0.5}}}]\n", 131072, 131072},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := buildYAML(t, base+tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			if p, d := b.instances[0].kvPerToken, b.instances[1].kvPerToken; p != tc.p || d != tc.d {
				t.Errorf("KV bytes per token: prefill %d, decode %d; want %d, %d", p, d, tc.p, tc.d)
			}
		})
	}
	_, err := config.Parse([]byte(base+"instances: [{name: p, role: prefill}, {name: d, role: decode, engine: {speculative: {method: eagle, num_speculative_tokens: 3, acceptance_rate: 0.7}}}]\n"), "q.yaml")
	if err == nil || !strings.Contains(err.Error(), "instances[1].engine.speculative: group d (decode) has eagle but group p (prefill) has no proposer KV") {
		t.Errorf("decode-only EAGLE: got %v, want the mismatch refused", err)
	}
}
