package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
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
for an embedded one; a trailing /tp<N>, as servesim catalog lists bundles,
selects the tensor-parallel degree. When FILE exists its other accelerators are kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if bundle == "" {
				return usageError{fmt.Errorf("--profiles BUNDLE is required")}
			}
			ref, refTP := calibrate.SplitTP(bundle)
			if refTP > 0 {
				if cmd.Flags().Changed("tp") && tp != refTP {
					return usageError{fmt.Errorf("--profiles %s names tp%d but --tp is %d; give one of them", bundle, refTP, tp)}
				}
				tp = refTP
			}
			fsys, name, err := openBundle(ref)
			if err != nil {
				return badInput(err)
			}
			start := time.Now()
			opts := calibrate.Options{Progress: func(stage string) {
				fmt.Fprintf(cmd.ErrOrStderr(), "calibrate: %s (%.0f s so far)\n", stage, time.Since(start).Seconds())
			}}
			accName, entry, rep, err := calibrate.FitBundleFolder(fsys, strings.TrimPrefix(name, "builtin:"), tp, opts)
			if err != nil {
				return badInput(err)
			}
			file := &calibrate.File{Version: 1, Accelerators: map[string]*calibrate.Entry{}}
			if out != "" {
				old, err := os.ReadFile(out)
				switch {
				case err == nil:
					if file, err = calibrate.Load(bytes.NewReader(old), out); err != nil {
						return badInput(err)
					}
				case !errors.Is(err, fs.ErrNotExist):
					return badInput(fmt.Errorf("-o %s: %w", out, err))
				}
			}
			file.Accelerators[accName] = entry
			var buf bytes.Buffer
			if err := calibrate.Write(&buf, file); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "calibrated %s on %s:\n%s", accName, entry.Source, rep.String())
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
