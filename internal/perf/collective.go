package perf

import "math"

// AllReduceNs is the time of a ring all-reduce of bytes over n ranks joined
// by links of linkBW bytes/s and linkLatencyNs per message:
//
//	2(n-1)/n × bytes / linkBW + 2(n-1) × linkLatencyNs
//
// (a reduce-scatter then an all-gather, each of n-1 steps moving 1/n of the
// data). It is 0 for n <= 1 or bytes <= 0, and saturates at math.MaxInt64.
func AllReduceNs(bytes int64, n int, linkBW float64, linkLatencyNs int64) int64 {
	if n <= 1 || bytes <= 0 {
		return 0
	}
	if !(linkBW > 0) {
		return math.MaxInt64
	}
	steps := float64(n - 1)
	return clampNs(2*steps/float64(n)*float64(bytes)/linkBW*1e9 + 2*steps*float64(max(linkLatencyNs, 0)))
}

// AllGatherNs is the time of a ring all-gather in which every one of n ranks
// contributes bytes/n: (n-1)/n × bytes / linkBW + (n-1) × linkLatencyNs.
func AllGatherNs(bytes int64, n int, linkBW float64, linkLatencyNs int64) int64 {
	if n <= 1 || bytes <= 0 {
		return 0
	}
	if !(linkBW > 0) {
		return math.MaxInt64
	}
	steps := float64(n - 1)
	return clampNs(steps/float64(n)*float64(bytes)/linkBW*1e9 + steps*float64(max(linkLatencyNs, 0)))
}

// TPComm describes the tensor-parallel communication of one instance.
type TPComm struct {
	// TP is the tensor-parallel degree; collectives apply only for TP > 1.
	TP int
	// Layers is the number of transformer layers (num_hidden_layers).
	Layers int
	// Hidden is the model's hidden size; BytesPerElem the activation size
	// (0 means 2, bf16).
	Hidden, BytesPerElem int
	// Vocab is the vocabulary size. When set, the logits of every sequence
	// (sequences × vocab × BytesPerElem) are all-gathered once per step, as
	// vLLM's LogitsProcessor gathers the vocabulary-parallel lm_head output.
	Vocab int
	// LinkBW (bytes/s per direction) and LinkLatencyNs describe the
	// GPU-to-GPU link (hw.Accelerator.Link).
	LinkBW        float64
	LinkLatencyNs int64
	// AR, when set (AR.N > 1), times the all-reduces and the logits
	// all-gather as vLLM issues them (see NewAllReduce) instead of the
	// plain ring over LinkBW and LinkLatencyNs.
	AR AllReduce
	// Scale multiplies the step's communication time (0: 1): a collective
	// efficiency factor, fitted to measured tp > 1 runs or set by hand
	// (predictor.collective_scale).
	Scale float64
	// Measured, when set, times the all-reduces and the logits all-gather
	// from measured tables (vLLM's own all-reduce dispatch when
	// MeasuredVLLM, else NCCL's); a size outside the tables falls back to
	// AR (or the ring) and is counted.
	Measured     CollectiveTimes
	MeasuredVLLM bool
}

// CollectiveTimes times collectives of one tensor-parallel group from
// measurements (package perfdb's Collectives); ns, and false outside the
// measured sizes.
type CollectiveTimes interface {
	AllReduce(vllm bool, bytes int64) (float64, bool)
	AllGather(bytes int64) (float64, bool)
}

// WithCollectives adds tensor-parallel communication to a per-rank
// predictor (Roofline or Profile, whose tables exclude it). For TP > 1 every
// step pays, on tokens × Hidden × BytesPerElem bytes each,
//
//   - one all-reduce after the vocabulary-parallel embedding,
//   - two all-reduces per layer: after the attention output projection
//     (o_proj) and after the MLP down projection (down_proj; the MoE block
//     output for MoE models),
//
// plus, when Vocab is set, the all-gather of the logits. For TP <= 1 it
// returns p unchanged. The wrapper does not allocate.
func WithCollectives(p Predictor, cfg TPComm) Predictor {
	if cfg.TP <= 1 {
		return p
	}
	if cfg.BytesPerElem == 0 {
		cfg.BytesPerElem = 2
	}
	return tpComm{Predictor: p, cfg: cfg}
}

type tpComm struct {
	Predictor
	cfg    TPComm
	counts *TableCounts // per run, with measured collectives
}

// ForRun implements RunScoped.
func (c tpComm) ForRun(counts *TableCounts) Predictor {
	return tpComm{ForRun(c.Predictor, counts), c.cfg, counts}
}

// StepTime implements Predictor.
func (c tpComm) StepTime(b *Batch) int64 {
	t := c.Predictor.StepTime(b)
	if b == nil {
		return t
	}
	return satAdd(t, c.CommNs(b))
}

// CommNs is the communication time of one step.
func (c tpComm) CommNs(b *Batch) int64 {
	tokens := int64(max(b.Tokens(), 0))
	if tokens == 0 {
		return 0
	}
	cfg := c.cfg
	msg := (tokens + int64(max(b.PadTokens, 0))) * int64(cfg.Hidden) * int64(cfg.BytesPerElem)
	seqs := int64(max(b.Rows(), 0))
	logits := seqs * int64(cfg.Vocab) * int64(cfg.BytesPerElem)
	var ar, gather int64
	if cfg.AR.N > 1 {
		ar, gather = cfg.AR.Ns(msg), cfg.AR.GatherNs(logits)
	} else {
		ar = AllReduceNs(msg, cfg.TP, cfg.LinkBW, cfg.LinkLatencyNs)
		gather = AllGatherNs(logits, cfg.TP, cfg.LinkBW, cfg.LinkLatencyNs)
	}
	if cfg.Measured != nil {
		var fell uint16
		if ns, ok := cfg.Measured.AllReduce(cfg.MeasuredVLLM, msg); ok {
			ar = clampNs(ns)
		} else {
			fell |= 1 << TableAllReduce
		}
		present := uint16(1 << TableAllReduce)
		if cfg.Vocab > 0 && logits > 0 {
			present |= 1 << TableAllGather
			if ns, ok := cfg.Measured.AllGather(logits); ok {
				gather = clampNs(ns)
			} else {
				fell |= 1 << TableAllGather
			}
		}
		if c.counts != nil {
			c.counts.add(present, fell)
		}
	}
	t := satMul(ar, int64(2*cfg.Layers+1))
	if cfg.Vocab > 0 {
		t = satAdd(t, gather)
	}
	if cfg.Scale > 0 && cfg.Scale != 1 {
		t = clampNs(math.Round(float64(t) * cfg.Scale))
	}
	return t
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, k int64) int64 {
	if k != 0 && a > math.MaxInt64/k {
		return math.MaxInt64
	}
	return a * k
}

// commAt is StepCommNs of inner, the inner predictor of engine time e,
// with the padding e gives b.
func commAt(e *engineTime, inner Predictor, b *Batch) (ns int64, ok bool) {
	_, padded := e.dispatch(b)
	saved := b.PadTokens
	b.PadTokens = max(padded-b.Tokens(), 0)
	ns, ok = StepCommNs(inner, b)
	b.PadTokens = saved
	return ns, ok
}

// StepCommNs is the tensor-parallel communication part of step b as
// predictor p times it: p's WithCollectives time, reached through the
// WithOverhead and WithEngineTime decorators (with the CUDA-graph padding
// the engine time gives the step). ok is false when p has no
// collectives (tp 1, or another predictor).
func StepCommNs(p Predictor, b *Batch) (ns int64, ok bool) {
	if b == nil {
		return 0, false
	}
	switch q := p.(type) {
	case overhead:
		return StepCommNs(q.Predictor, b)
	case *engineTime:
		return commAt(q, q.inner, b)
	case *profileEngine:
		return commAt(q.tmpl, &q.own, b)
	case tpComm:
		return q.CommNs(b), true
	}
	return 0, false
}
