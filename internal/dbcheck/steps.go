package dbcheck

import (
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/internal/perf"
)

// StepCase is one deployment whose step times Steps compares: a model on
// an accelerator at a tensor-parallel degree, with its linear layers in a
// quantization method ("" for bf16, fp8, modelopt_fp4) and its KV cache in
// KVCacheDtype ("" or auto: the compute dtype; fp8).
type StepCase struct {
	Hardware, Model, Quantization string
	KVCacheDtype                  string
	TP                            int
}

// Format is the case's weight format as printed: bf16, fp8 or nvfp4.
func (c StepCase) Format() string {
	switch c.Quantization {
	case "":
		return "bf16"
	case "modelopt_fp4":
		return "nvfp4"
	}
	return c.Quantization
}

// String names the case: "H100 meta-llama/Llama-3.1-8B fp8 tp 2" (with
// ", fp8 KV" for an fp8 KV cache).
func (c StepCase) String() string {
	kv := ""
	if c.KVCacheDtype != "" && c.KVCacheDtype != "auto" {
		kv = ", " + c.KVCacheDtype + " KV"
	}
	return fmt.Sprintf("%s %s %s tp %d%s", c.Hardware, c.Model, c.Format(), c.TP, kv)
}

// StepShape is one batch a step matrix times: Decodes requests decoding
// one token each at Context tokens of context, or (Decodes 0) one prompt
// of Prefill tokens from an empty cache.
type StepShape struct {
	Decodes, Context, Prefill int
}

// String names the shape: "decode 32x2048" or "prefill 2048".
func (s StepShape) String() string {
	if s.Decodes > 0 {
		return fmt.Sprintf("decode %dx%d", s.Decodes, s.Context)
	}
	return fmt.Sprintf("prefill %d", s.Prefill)
}

func (s StepShape) batch() perf.Batch {
	if s.Decodes > 0 {
		return perf.Batch{NumDecode: s.Decodes, DecodeKVSum: int64(s.Decodes) * int64(s.Context), DecodeKVMax: s.Context, DecodeKVMin: s.Context}
	}
	return perf.Batch{PrefillTokens: s.Prefill, PrefillSeqs: 1}
}

// StepRow is one case and shape: the engine step time (µs) of the
// calibrated roofline and of the perfdb predictor, each with the same
// engine time, CUDA-graph padding and tensor-parallel collectives model
// around it (the perfdb predictor's all-reduces from the database's
// tables), and perfdb / roofline − 1; the collectives' part of each
// (perf.StepCommNs), and the difference of the rest (the GPU kernels,
// engine and host time).
type StepRow struct {
	Case                         StepCase
	Shape                        string
	RooflineUs, PerfDBUs         float64
	DiffPct                      float64
	RooflineCommUs, PerfDBCommUs float64
	RestDiffPct                  float64
}

// StepBuilder builds the step predictor of one instance of case c with
// predictor.kind kind (roofline or perfdb), as a run builds it.
type StepBuilder func(c StepCase, kind string) (perf.Predictor, error)

// Steps times every shape of every case with both predictors, built by
// build. A case that does not build (the model does not fit the GPUs, a
// format the GPU cannot run) is skipped, with the reason in skipped; it
// is an error when no case builds.
func Steps(cases []StepCase, shapes []StepShape, build StepBuilder) (rows []StepRow, skipped []string, err error) {
	var out []StepRow
	for _, c := range cases {
		var preds [2]perf.Predictor
		var berr error
		for i, kind := range []string{"roofline", "perfdb"} {
			if preds[i], berr = build(c, kind); berr != nil {
				break
			}
		}
		if berr != nil {
			msg := berr.Error()
			if i := strings.IndexAny(msg, ";\n"); i > 0 {
				msg = msg[:i]
			}
			if i := strings.LastIndex(msg, ": "); i > 0 {
				msg = msg[i+2:] // the reason, without the paths to it
			}
			skipped = append(skipped, c.String()+": "+msg)
			continue
		}
		for _, s := range shapes {
			var us, comm [2]float64
			for i, p := range preds {
				b := s.batch()
				us[i] = float64(p.StepTime(&b)) / 1e3
				b = s.batch()
				ns, _ := perf.StepCommNs(p, &b)
				comm[i] = float64(ns) / 1e3
			}
			out = append(out, StepRow{Case: c, Shape: s.String(), RooflineUs: us[0], PerfDBUs: us[1], DiffPct: 100 * (us[1]/us[0] - 1),
				RooflineCommUs: comm[0], PerfDBCommUs: comm[1], RestDiffPct: 100 * ((us[1]-comm[1])/(us[0]-comm[0]) - 1)})
		}
	}
	if len(out) == 0 && len(skipped) > 0 {
		return nil, skipped, fmt.Errorf("no case builds: %s", strings.Join(skipped, "; "))
	}
	return out, skipped, nil
}

// WriteSteps prints the rows: with detail one line per case and shape
// (both times and the difference), else one line per case with the
// difference (perfdb / roofline − 1, %) of every shape in columns; then
// the skipped cases.
func WriteSteps(w io.Writer, rows []StepRow, skipped []string, detail bool) error {
	var b strings.Builder
	if detail {
		fmt.Fprintf(&b, "%-8s %-26s %-6s %3s %-16s %12s %12s %8s %10s %10s %8s\n", "hardware", "model", "format", "tp", "step",
			"roofline us", "perfdb us", "diff %", "r comm us", "p comm us", "rest %")
		for _, r := range rows {
			c := r.Case
			fmt.Fprintf(&b, "%-8s %-26s %-6s %3d %-16s %12.1f %12.1f %+8.1f %10.1f %10.1f %+8.1f\n", c.Hardware, c.Model, c.Format(), c.TP, r.Shape,
				r.RooflineUs, r.PerfDBUs, r.DiffPct, r.RooflineCommUs, r.PerfDBCommUs, r.RestDiffPct)
		}
	} else {
		var shapes []string
		for _, r := range rows {
			if len(shapes) > 0 && r.Shape == shapes[0] {
				break
			}
			shapes = append(shapes, r.Shape)
		}
		kv := ""
		if len(rows) > 0 && rows[0].Case.KVCacheDtype != "" && rows[0].Case.KVCacheDtype != "auto" {
			kv = ", " + rows[0].Case.KVCacheDtype + " KV cache"
		}
		fmt.Fprintf(&b, "perfdb / roofline - 1, %% (engine step time%s)\n%-8s %-26s %-6s %3s", kv, "hardware", "model", "format", "tp")
		for _, s := range shapes {
			fmt.Fprintf(&b, " %16s", s)
		}
		b.WriteString("\n")
		for i := 0; i+len(shapes) <= len(rows); i += len(shapes) {
			c := rows[i].Case
			fmt.Fprintf(&b, "%-8s %-26s %-6s %3d", c.Hardware, c.Model, c.Format(), c.TP)
			for _, r := range rows[i : i+len(shapes)] {
				fmt.Fprintf(&b, " %+16.1f", r.DiffPct)
			}
			b.WriteString("\n")
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(&b, "skipped: %s\n", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
