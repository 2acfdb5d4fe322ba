package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/internal/convert"
	"github.com/spf13/cobra"
)

// newConvertCmd is `servesim convert`: one subcommand per foreign format.
func newConvertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Convert another simulator's cluster description into a servesim scenario",
		Long: `Convert another simulator's cluster description into a servesim scenario YAML.

  servesim convert llmservingsim CLUSTER.json -o scenario.yaml
  servesim run -c scenario.yaml`,
	}
	cmd.AddCommand(newConvertLLMServingSimCmd())
	return cmd
}

type convertFlags struct {
	out       string
	models    string
	profiles  string
	predictor string
	workload  string
}

func newConvertLLMServingSimCmd() *cobra.Command {
	var f convertFlags
	cmd := &cobra.Command{
		Use:   "llmservingsim CLUSTER.json",
		Short: "Convert an LLMServingSim cluster config (JSON) into a scenario YAML",
		Long: `Convert an LLMServingSim cluster config (the JSON of its --cluster-config flag)
into a servesim scenario YAML, on stdout or into the file given with -o.

Mapping: model_name -> model; hardware -> hardware (catalog name);
npu_mem.mem_size (GB) -> memory_gb; npu_mem.mem_util ->
engine.gpu_memory_utilization; tp_size / num_npus -> tp; pp_size -> pp
(pipeline stages); pd_type -> role (null: mixed); per-instance
max_num_seqs, max_num_batched_tokens, block_size,
long_prefill_token_threshold, enable_chunked_prefill, enable_prefix_caching
-> the group's engine; link_bw (GiB/s) -> links.bandwidth_gbps (GB/s);
link_latency (ns) -> links.latency_us. Identical instances become one group
with a count.

Data-parallel groups become independent instances and expert parallelism
tensor-parallel sharding of the experts; each approximation is noted in the
YAML header. Power models, PIM, CXL memory and weight or KV placement off
the GPU are refused, naming the sections. Without a measured profile bundle
for the model on the hardware, the roofline predictor is chosen (--predictor
to force one).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runConvertLLMServingSim(cmd, args[0], &f) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.out, "output", "o", "", "write the scenario YAML to FILE (default: stdout)")
	fs.StringVar(&f.models, "models", "", "directory of extra HuggingFace configs <org>/<name>.json (written to models)")
	fs.StringVar(&f.profiles, "profiles", "", "root of profile bundles <hw>/<org>/<model>/<dtype>/tp<N> (written to predictor.profiles)")
	fs.StringVar(&f.predictor, "predictor", "auto", "auto (profile when a bundle exists for every group, else roofline), profile or roofline")
	fs.StringVar(&f.workload, "workload", "", "workload.trace: JSONL trace or builtin:NAME (default: the builtin ShareGPT trace for the model family)")
	return cmd
}

func runConvertLLMServingSim(cmd *cobra.Command, path string, f *convertFlags) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return badInput(fmt.Errorf("read cluster config: %w", err))
	}
	opts := convert.Options{Name: filepath.Base(path), Predictor: f.predictor}
	// Directories are written into the scenario, which resolves relative
	// paths against its own folder: make them absolute.
	if opts.Models, err = absPath(f.models); err != nil {
		return badInput(fmt.Errorf("--models: %w", err))
	}
	if opts.Profiles, err = absPath(f.profiles); err != nil {
		return badInput(fmt.Errorf("--profiles: %w", err))
	}
	if opts.Workload, err = absTrace(f.workload); err != nil {
		return badInput(fmt.Errorf("--workload: %w", err))
	}
	res, err := convert.LLMServingSim(data, opts)
	if err != nil {
		return badInput(err)
	}
	if f.out == "" {
		_, err := cmd.OutOrStdout().Write(res.YAML)
		return err
	}
	if err := os.WriteFile(f.out, res.YAML, 0o644); err != nil {
		return badInput(fmt.Errorf("--out: %w", err))
	}
	s := res.Scenario
	n := 0
	for _, g := range s.Instances {
		n += *g.Count
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %s on %s, %s in %s, predictor %s; %s in its header\n",
		f.out, s.Model, s.Hardware, count(n, "instance"), count(len(s.Instances), "group"), s.Predictor.Kind, count(len(res.Notes), "note"))
	return nil
}

// count is n followed by noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// absPath makes a non-empty path absolute.
func absPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return filepath.Abs(p)
}

// absTrace makes a trace file path absolute; builtin:NAME stays.
func absTrace(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "builtin:") {
		return p, nil
	}
	return filepath.Abs(p)
}
