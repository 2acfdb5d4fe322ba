package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/dbcheck"
	"github.com/servesim/servesim/internal/perf"
	"github.com/spf13/cobra"
)

// perfdb steps: the roofline's step times against the perfdb predictor's.

func newPerfDBStepsCmd() *cobra.Command {
	var (
		hardware, models, formats, tps []string
		decodes, prefills              []string
		kvDtype                        string
		detail                         bool
	)
	cmd := &cobra.Command{
		Use:   "steps [--hardware H100,H200,B200] [--model ORG/NAME,...] [--format bf16,fp8,nvfp4] [--tp 1,2,4,8] [--decode NxCTX,...] [--prefill N,...] [--kv-cache-dtype auto|fp8] [--detail]",
		Short: "Engine step times of the calibrated roofline against the perfdb predictor, per deployment and batch shape",
		Long: `Time the same batches with predictor.kind roofline (the accelerator's embedded
calibration, servesim's all-reduce model) and predictor.kind perfdb (the
kernel database's tables, its measured all-reduces; the roofline where the
tables have no row), each as one instance of a run builds it: the same
engine time, CUDA-graph padding and collectives around it. Every
combination of --hardware, --model, --format and --tp is a case (one that
cannot run, e.g. a model that does not fit or nvfp4 on a GPU without FP4
tensor cores, is listed as skipped); every --decode NxCTX (N requests
decoding at CTX tokens of context) and --prefill N (one prompt of N tokens
from an empty cache) a batch. Prints perfdb / roofline - 1 in %; --detail
both times in µs. See docs/perfdb.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var shapes []dbcheck.StepShape
			for _, d := range decodes {
				n, ctx, ok := strings.Cut(d, "x")
				a, e1 := strconv.Atoi(n)
				c, e2 := strconv.Atoi(ctx)
				if !ok || e1 != nil || e2 != nil || a < 1 || c < 1 {
					return badInput(fmt.Errorf("--decode %q: want N x context, e.g. 32x2048", d))
				}
				shapes = append(shapes, dbcheck.StepShape{Decodes: a, Context: c})
			}
			for _, p := range prefills {
				n, err := strconv.Atoi(p)
				if err != nil || n < 1 {
					return badInput(fmt.Errorf("--prefill %q: want a token count >= 1, e.g. 2048", p))
				}
				shapes = append(shapes, dbcheck.StepShape{Prefill: n})
			}
			if len(shapes) == 0 {
				return badInput(fmt.Errorf("--decode and --prefill: give at least one batch"))
			}
			var cases []dbcheck.StepCase
			for _, h := range hardware {
				for _, m := range models {
					for _, f := range formats {
						q, ok := map[string]string{"bf16": "", "fp8": "fp8", "nvfp4": "modelopt_fp4"}[f]
						if !ok {
							return badInput(fmt.Errorf("--format %q: want bf16, fp8 or nvfp4", f))
						}
						for _, t := range tps {
							tp, err := strconv.Atoi(t)
							if err != nil || tp < 1 {
								return badInput(fmt.Errorf("--tp %q: want a degree >= 1", t))
							}
							cases = append(cases, dbcheck.StepCase{Hardware: h, Model: m, Quantization: q, KVCacheDtype: kvDtype, TP: tp})
						}
					}
				}
			}
			rows, skipped, err := dbcheck.Steps(cases, shapes, stepPredictor)
			if err != nil {
				return badInput(err)
			}
			return dbcheck.WriteSteps(cmd.OutOrStdout(), rows, skipped, detail)
		},
	}
	cmd.Flags().StringSliceVar(&hardware, "hardware", []string{"H100", "H200", "B200"}, "accelerators (catalog names with a perfdb_system)")
	cmd.Flags().StringSliceVar(&models, "model", []string{"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B"}, "models")
	cmd.Flags().StringSliceVar(&formats, "format", []string{"bf16", "fp8", "nvfp4"}, "weight formats: bf16, fp8 (per-tensor W8A8), nvfp4 (modelopt_fp4)")
	cmd.Flags().StringSliceVar(&tps, "tp", []string{"1", "2", "4", "8"}, "tensor-parallel degrees")
	cmd.Flags().StringSliceVar(&decodes, "decode", []string{"1x1024", "32x2048", "128x2048"}, "decode batches, N requests x context tokens")
	cmd.Flags().StringSliceVar(&prefills, "prefill", []string{"2048", "8192"}, "prefill batches, tokens of one prompt")
	cmd.Flags().StringVar(&kvDtype, "kv-cache-dtype", "auto", "KV cache dtype of every case: auto (bf16) or fp8")
	cmd.Flags().BoolVar(&detail, "detail", false, "one line per case and batch with both times (µs)")
	return cmd
}

// stepPredictor builds the step predictor of one instance of case c with
// predictor.kind kind, as a run would: a scenario of the case with a
// one-request workload (only the instance's predictor is used).
func stepPredictor(c dbcheck.StepCase, kind string) (perf.Predictor, error) {
	q := ""
	if c.Quantization != "" {
		q = "quantization: " + c.Quantization + "\n"
	}
	if c.KVCacheDtype != "" {
		q += "kv_cache_dtype: " + c.KVCacheDtype + "\n"
	}
	y := fmt.Sprintf("model: %s\nhardware: %s\ndtype: bf16\n%spredictor: {kind: %s}\ninstances: [{name: g, tp: %d, count: 1}]\n"+
		"workload: {synthetic: {requests: 1, arrival: {kind: burst}, input: {kind: fixed, mean: 16}, output: {kind: fixed, mean: 2}}}\n",
		c.Model, c.Hardware, q, kind, c.TP)
	s, err := config.Parse([]byte(y), "step case")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	b, err := assemble.Build(s, config.Source{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	return b.Instance(0).Predictor, nil
}
