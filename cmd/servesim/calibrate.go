package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/spf13/cobra"
)

func newCalibrateCmd() *cobra.Command {
	var (
		bundle, out string
		tp          int
	)
	cmd := &cobra.Command{
		Use:   "calibrate --profiles BUNDLE [-o FILE]",
		Short: "Fit the roofline predictor's efficiencies for one accelerator from a measured profile bundle",
		Long: `Fit the roofline step-latency predictor's efficiency and overhead parameters
for one accelerator by least squares over every dense, attention and
per-sequence table point of a measured profile bundle, and write them as a
calibration YAML that scenarios load with predictor.calibration. A
calibration is per accelerator, not per model: fit it on one model and use
it for any model on that accelerator.

BUNDLE is a bundle folder holding meta.yaml and tp<N>/ tables (for example
profiles/RTXPRO6000/Qwen/Qwen3-32B/bf16), or builtin:<hw>/<org>/<model>/<dtype>
for an embedded one. When FILE exists its other accelerators are kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if bundle == "" {
				return usageError{fmt.Errorf("--profiles BUNDLE is required")}
			}
			fsys, name, err := openBundle(bundle)
			if err != nil {
				return badInput(err)
			}
			var meta struct {
				Hardware string `yaml:"hardware"`
				Model    string `yaml:"model"`
				Variant  string `yaml:"variant"`
			}
			data, err := fs.ReadFile(fsys, "meta.yaml")
			if err != nil {
				return badInput(fmt.Errorf("--profiles %s: %w; a bundle folder holds meta.yaml and tp<N>/", name, err))
			}
			if err := yaml.Unmarshal(data, &meta); err != nil {
				return badInput(fmt.Errorf("%s/meta.yaml: %w", name, err))
			}
			acc, err := hw.Lookup(meta.Hardware)
			if err != nil {
				return badInput(fmt.Errorf("%s/meta.yaml hardware: %w", name, err))
			}
			m, err := model.Load(model.Builtin(), meta.Model)
			if err != nil {
				return badInput(fmt.Errorf("%s/meta.yaml model: %w", name, err))
			}
			dtype := "bf16"
			if meta.Variant != "" {
				dtype = meta.Variant
			}
			rm, err := calibrate.ModelOf(m, dtype)
			if err != nil {
				return badInput(err)
			}
			rh, err := calibrate.HWOf(acc, dtype)
			if err != nil {
				return badInput(err)
			}
			tpDir := fmt.Sprintf("tp%d", tp)
			entry, rep, err := calibrate.FitBundle(fsys, tpDir, rm, rh, tp, calibrate.Options{})
			if err != nil {
				return badInput(err)
			}
			entry.Source = path.Join(strings.TrimPrefix(name, "builtin:"), tpDir)
			file := &calibrate.File{Version: 1, Accelerators: map[string]*calibrate.Entry{}}
			if out != "" {
				if old, err := os.ReadFile(out); err == nil {
					if file, err = calibrate.Load(bytes.NewReader(old), out); err != nil {
						return badInput(err)
					}
				}
			}
			file.Accelerators[acc.Name] = entry
			var buf bytes.Buffer
			if err := calibrate.Write(&buf, file); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "calibrated %s on %s:\n%s", acc.Name, entry.Source, rep.String())
			if out == "" {
				_, err = cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			return os.WriteFile(out, buf.Bytes(), 0o644)
		},
	}
	cmd.Flags().StringVar(&bundle, "profiles", "", "profile bundle folder (holding meta.yaml), or builtin:<hw>/<org>/<model>/<dtype>")
	cmd.Flags().IntVar(&tp, "tp", 1, "tensor-parallel degree of the tables to fit")
	cmd.Flags().StringVarP(&out, "output", "o", "", "calibration YAML to write or update (default: stdout)")
	return cmd
}

// openBundle opens a bundle folder on disk or among the embedded ones.
func openBundle(b string) (fs.FS, string, error) {
	if rest, ok := strings.CutPrefix(b, "builtin:"); ok {
		sub, err := fs.Sub(assets.FS(), path.Join("profiles", rest))
		if err != nil {
			return nil, "", err
		}
		if _, err := fs.Stat(sub, "meta.yaml"); err != nil {
			return nil, "", fmt.Errorf("--profiles: no embedded bundle %q (see servesim catalog)", rest)
		}
		return sub, b, nil
	}
	st, err := os.Stat(b)
	if err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("--profiles: %q is not a directory", b)
	}
	return os.DirFS(b), b, nil
}
