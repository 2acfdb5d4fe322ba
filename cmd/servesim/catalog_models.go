package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/servesim/servesim/internal/model"
	"github.com/spf13/cobra"
)

// newCatalogModelsCmd lists the sizes servesim derives from each model's
// config: parameters, active parameters per token, KV bytes per token and
// the attention layout.
func newCatalogModelsCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "models [ORG/NAME...]",
		Short: "Parameters, active parameters, KV bytes per token and attention layout of the known models",
		Long: `Parameters, active parameters per token, KV bytes per token and attention
layout of each model, as servesim derives them from its HuggingFace config
(all embedded models, or the ones named; --models DIR adds a directory of
<org>/<name>.json configs). Parameters exclude the MTP module (listed
apart) and any vision encoder. Active counts include the input embedding.
KV bytes are for one token on one GPU at tp 1 in bf16, every layer
counted as full attention (docs/attention.md for the sliding-window and
chunked layers' KV cache groups).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			fsys := model.Builtin()
			if dir != "" {
				fsys = os.DirFS(dir)
			}
			names := args
			if len(names) == 0 {
				names = model.List(fsys)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tTYPE\tPARAMS (B)\tACTIVE (B)\tMTP (B)\tKV (B/token)\tATTENTION")
			for _, n := range names {
				c, err := model.Load(fsys, n)
				if err != nil {
					return badInput(err)
				}
				mtp := "-"
				if p := c.MTPParamCount(); p > 0 {
					mtp = fmt.Sprintf("%.2f", float64(p)/1e9)
				}
				fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%s\t%d\t%s\n", c.Name, c.ModelType, float64(c.ParamCount())/1e9,
					float64(c.ActiveParamCount())/1e9, mtp, c.KVBytesPerToken(2), attentionLayout(c))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dir, "models", "", "directory of HuggingFace configs <org>/<name>.json to list instead of the embedded ones")
	return cmd
}

// attentionLayout describes a model's attention in a few words.
func attentionLayout(c *model.Config) string {
	if c.IsMLA() {
		return fmt.Sprintf("MLA, latent %d + rope %d, %d heads", c.KVLoraRank, c.QKRopeHeadDim, c.NumHeads)
	}
	s := fmt.Sprintf("GQA %d/%d heads of %d", c.NumHeads, c.NumKVHeads, c.HeadDim)
	full := c.NumLayersOfKind(model.AttnFull)
	if n := c.NumLayersOfKind(model.AttnSliding); n > 0 {
		s += fmt.Sprintf("; %d full + %d sliding %d", full, n, c.SlidingWindow)
	}
	if n := c.NumLayersOfKind(model.AttnChunked); n > 0 {
		s += fmt.Sprintf("; %d full + %d chunked %d", full, n, c.AttentionChunkSize)
	}
	if c.AttentionSinks {
		s += "; sinks"
	}
	return s
}
