package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/spf13/cobra"
)

// newPerfDBAlltoallCmd lists the all-to-all of one MoE layer, per backend
// and EP size, as a run times it (docs/wide-ep.md).
func newPerfDBAlltoallCmd() *cobra.Command {
	var (
		accName, modelName, eps, dtype, dir string
		tokens                              int
	)
	cmd := &cobra.Command{
		Use:   "alltoall --hardware NAME --model ORG/NAME [--tokens N] [--ep 8,16,...]",
		Short: "The dispatch and combine of one MoE layer per all-to-all backend and EP size, as servesim times them",
		Long: `List the expert-parallel all-to-all of one MoE layer at --tokens tokens a rank
for each EP size of --ep (one GPU a rank, nodes of the accelerator's catalog
size; a group larger than a node crosses nodes on the NICs): vLLM's
allgather_reducescatter (NCCL), DeepEP's low-latency kernels
(deepep_low_latency) and normal kernels (deepep_high_throughput). Dispatch,
combine and their sum per layer in µs, the step's all-to-all in ms (every
MoE layer), and where the times come from: the model (docs/wide-ep.md) or
the database's measured DeepEP table (one node, the model's shape).
--dispatch-dtype fp8 sends FP8 with a scale per 128 elements (block-FP8
checkpoints), bf16 two bytes an element; combines are BF16.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			acc, err := hw.Lookup(accName)
			if err != nil {
				return badInput(fmt.Errorf("--hardware: %w", err))
			}
			m, err := model.Load(model.Builtin(), modelName)
			if err != nil {
				return badInput(fmt.Errorf("--model: %w", err))
			}
			if m.NumExperts == 0 {
				return badInput(fmt.Errorf("--model: %s is a dense model (no experts)", m.Name))
			}
			sizes, err := parseEPs(eps, int(m.NumExperts))
			if err != nil {
				return badInput(err)
			}
			if tokens < 1 || tokens > 1<<20 {
				return badInput(fmt.Errorf("--tokens must be in [1, %d] (got %d)", 1<<20, tokens))
			}
			db, _, err := openPerfDB(dir)
			if err != nil {
				return err
			}
			var dispatchBytes float64
			switch dtype {
			case "fp8":
				dispatchBytes = float64(m.HiddenSize + (m.HiddenSize+127)/128*4)
			case "bf16":
				dispatchBytes = float64(2 * m.HiddenSize)
			default:
				return badInput(fmt.Errorf("--dispatch-dtype must be fp8 or bf16 (got %q)", dtype))
			}
			return writeAlltoall(cmd, db, acc, m, sizes, tokens, dispatchBytes)
		},
	}
	cmd.Flags().StringVar(&accName, "hardware", "H200", "accelerator (its NVLink, NIC and node size)")
	cmd.Flags().StringVar(&modelName, "model", "deepseek-ai/DeepSeek-V3", "MoE model (hidden size, experts, top-k, MoE layers)")
	cmd.Flags().StringVar(&eps, "ep", "8,16,32,64", "comma-separated EP sizes")
	cmd.Flags().IntVar(&tokens, "tokens", 128, "tokens a rank")
	cmd.Flags().StringVar(&dtype, "dispatch-dtype", "fp8", "fp8 or bf16")
	cmd.Flags().StringVar(&dir, "path", "", "the database's systems folder (default: the embedded copy)")
	return cmd
}

// parseEPs reads --ep.
func parseEPs(s string, experts int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > experts || experts%n != 0 {
			return nil, fmt.Errorf("--ep: %q is not an EP size dividing the %d experts (at least 2)", f, experts)
		}
		out = append(out, n)
	}
	return out, nil
}

// writeAlltoall prints the table.
func writeAlltoall(cmd *cobra.Command, db fs.FS, acc hw.Accelerator, m *model.Config, sizes []int, tokens int, dispatchBytes float64) error {
	w := cmd.OutOrStdout()
	node := max(acc.Node.LinkDomain(), 1)
	layers := m.NumMoELayers()
	fmt.Fprintf(w, "%s on %s (nodes of %d, NVLink %.0f GB/s, NIC %.0f GB/s a GPU), %d tokens a rank, top-%d of %d experts, %d MoE layers\n",
		m.Name, acc.Name, node, acc.Link.Bandwidth/1e9, acc.NIC.Bandwidth/1e9, tokens, m.ExpertsPerTok, m.NumExperts, layers)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "EP\tnodes\tbackend\tdispatch (µs)\tcombine (µs)\tlayer (µs)\tstep (ms)\tsource\t")
	shape := perfdb.DeepEPShape{Hidden: int(m.HiddenSize), TopK: int(m.ExpertsPerTok), Experts: int(m.NumExperts)}
	for _, ep := range sizes {
		f := moe.Fabric{EP: ep, NodeRanks: min(ep, node), NVLinkBW: acc.Link.Bandwidth, NICBW: acc.NIC.Bandwidth}
		for _, ll := range []bool{true, false} {
			d := moe.DeepEP{Fabric: f, LowLatency: ll, DP: ep, TopK: int(m.ExpertsPerTok), Experts: int(m.NumExperts),
				DispatchBytes: dispatchBytes, CombineBytes: float64(2 * m.HiddenSize)}
			if ep == acc.Node.GPUs && acc.PerfDBSystem != "" {
				t, err := perfdb.OpenDeepEP(db, acc.PerfDBSystem, ll)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				if t.Has(shape) {
					d.Measured = func(x float64) (float64, float64, bool) { return t.At(shape, x) }
				}
			}
			dn, cn, measured := d.Phases(tokens*ep, 0)
			name, src := "deepep_high_throughput", "model"
			if ll {
				name = "deepep_low_latency"
			}
			if measured {
				src = "perfdb " + acc.PerfDBSystem
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t\n", ep, f.Nodes(), name, dn/1e3, cn/1e3, (dn+cn)/1e3, float64(layers)*(dn+cn)/1e6, src)
		}
		ag := agrsLayerNs(acc, ep, tokens, m)
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t\n", ep, f.Nodes(), "allgather_reducescatter", ag/2e3, ag/2e3, ag/1e3, float64(layers)*ag/1e6, "model")
	}
	return tw.Flush()
}

// agrsLayerNs is vLLM's allgather_reducescatter of one layer (bf16 hidden
// states; rings across the NICs beyond one node), as a run builds it.
func agrsLayerNs(acc hw.Accelerator, ep, tokens int, m *model.Config) float64 {
	intra := perf.Interconnect{NVLink: acc.Link.FullyConnected(), P2P: acc.Link.P2P, LinkBW: acc.Link.Bandwidth}
	comm := perf.NewAllReduce(ep, intra, true)
	if g := acc.Node.LinkDomain(); g > 0 && ep > g {
		comm = perf.NewSpanningAllReduce(ep, intra, acc.NIC.Bandwidth, acc.NIC.LatencyNs)
	}
	a := moe.AllGatherReduceScatter{Comm: comm, HiddenBytes: 2 * m.HiddenSize}
	return float64(a.LayerNs(tokens*ep, 0))
}
