package main

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/spf13/cobra"
)

func newCatalogCmd() *cobra.Command {
	var accels, models string
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List the accelerators, models, profile bundles and workloads servesim knows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if st, err := os.Stat(models); models != "" && (err != nil || !st.IsDir()) {
				return badInput(fmt.Errorf("--models %s: want a directory of HuggingFace configs <org>/<name>.json", models))
			}
			cat, err := hw.Default()
			if err != nil {
				return err
			}
			if accels != "" {
				if cat, err = hw.LoadFile(accels); err != nil {
					return badInput(fmt.Errorf("--accelerators: %w", err))
				}
			}
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACCELERATOR\tMEMORY (GB)\tBANDWIDTH (GB/s)\tBF16 (TFLOP/s)\tPRODUCT")
			for _, a := range cat.All() {
				fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%s\n", a.Name, float64(a.MemoryBytes)/1e9, a.MemBandwidth/1e9, a.PeakFLOPSBF16/1e12, a.Product)
			}
			tw.Flush()
			fmt.Fprintln(out)
			fmt.Fprintln(out, "MODELS (embedded HuggingFace configs)")
			for _, m := range model.List(model.Builtin()) {
				fmt.Fprintln(out, "  "+m)
			}
			if models != "" {
				fmt.Fprintf(out, "\nMODELS (%s; servesim catalog models --models %s gives their parameters)\n", models, models)
				for _, m := range model.List(os.DirFS(models)) {
					fmt.Fprintln(out, "  "+m)
				}
			}
			fmt.Fprintln(out)
			fmt.Fprintln(out, "MODEL ARCHITECTURES (config.json model_type accepted, and the layer catalog that times it)")
			for _, a := range model.Architectures() {
				fmt.Fprintf(out, "  %-12s %-12s %s\n", a.ModelType, a.LayerCatalog, a.Note)
			}
			fmt.Fprintln(out)
			fmt.Fprintln(out, "PROFILE BUNDLES (embedded; servesim calibrate --profiles takes these names)")
			err = fs.WalkDir(assets.FS(), "profiles", func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && strings.HasPrefix(d.Name(), "tp") {
					fmt.Fprintln(out, "  builtin:"+strings.TrimPrefix(p, "profiles/"))
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("list embedded profile bundles: %w", err)
			}
			fmt.Fprintln(out)
			fmt.Fprintln(out, "MEASURED vLLM RUNS (servesim validate --measured builtin:NAME)")
			for _, r := range measuredRuns() {
				fmt.Fprintln(out, "  "+r)
			}
			fmt.Fprintln(out)
			fmt.Fprintln(out, "WORKLOADS (use as workload.trace: builtin:NAME)")
			for _, w := range assemble.BuiltinWorkloads() {
				fmt.Fprintln(out, "  "+w)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&accels, "accelerators", "", "YAML file of accelerators in the catalog's shape, listed with the built-in ones")
	cmd.Flags().StringVar(&models, "models", "", "directory of extra HuggingFace configs <org>/<name>.json, listed after the embedded models")
	cmd.AddCommand(newCatalogModelsCmd())
	return cmd
}
