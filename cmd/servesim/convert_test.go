package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// convertTestdata is the folder of LLMServingSim example configs.
const convertTestdata = "../../internal/convert/testdata"

// runConvert executes `convert ARGS...` on the convert command alone (it
// is registered in root.go separately) and returns stdout, stderr and the
// error.
func runConvert(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newConvertCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func TestConvertCommand(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		wantStdout string // prefix of stdout
		wantStderr string // substring of stderr
		wantErr    []string
		output     string // file that must load as a scenario
	}{
		{
			name:       "to a file",
			args:       []string{"llmservingsim", filepath.Join(convertTestdata, "single_node_pd_per_instance_config.json"), "-o", filepath.Join(dir, "pd.yaml")},
			wantStderr: "wrote " + filepath.Join(dir, "pd.yaml") + ": meta-llama/Llama-3.1-8B on RTXPRO6000, 2 instances in 2 groups, predictor profile",
			output:     filepath.Join(dir, "pd.yaml"),
		},
		{
			name:       "one instance: singular",
			args:       []string{"llmservingsim", filepath.Join(convertTestdata, "single_node_single_instance.json"), "-o", filepath.Join(dir, "one.yaml")},
			wantStderr: " on RTXPRO6000, 1 instance in 1 group, predictor ",
			output:     filepath.Join(dir, "one.yaml"),
		},
		{
			name:       "to stdout, forced predictor, builtin workload",
			args:       []string{"llmservingsim", filepath.Join(convertTestdata, "single_node_pp_instance.json"), "--predictor", "roofline", "--workload", "builtin:example_trace"},
			wantStdout: "# servesim scenario converted",
		},
		{
			name:    "refused: names the sections",
			args:    []string{"llmservingsim", filepath.Join(convertTestdata, "single_node_pim_instance.json")},
			wantErr: []string{"nodes[0].cpu_mem.pim_config", "nodes[0].power"},
		},
		{
			name:    "missing file",
			args:    []string{"llmservingsim", filepath.Join(dir, "nope.json")},
			wantErr: []string{"read cluster config", "nope.json"},
		},
		{
			name:    "bad predictor",
			args:    []string{"llmservingsim", filepath.Join(convertTestdata, "single_node_single_instance.json"), "--predictor", "magic"},
			wantErr: []string{"predictor", "auto, profile or roofline"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := runConvert(t, tc.args...)
			if len(tc.wantErr) > 0 {
				var ie inputError
				if !errors.As(err, &ie) {
					t.Fatalf("want an input error (exit code 2), got %v", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(stdout, tc.wantStdout) {
				t.Errorf("stdout starts %.80q, want %q", stdout, tc.wantStdout)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.wantStderr)
			}
			if tc.output != "" {
				if _, _, err := config.Load(tc.output); err != nil {
					t.Fatalf("converted file does not load: %v", err)
				}
			} else if _, err := config.Parse([]byte(stdout), "stdout"); err != nil {
				t.Fatalf("stdout does not load: %v", err)
			}
		})
	}
}

func TestAbsTrace(t *testing.T) {
	for _, p := range []string{"", "builtin:example_trace"} {
		if got, err := absTrace(p); err != nil || got != p {
			t.Errorf("absTrace(%q) = %q, %v; want it unchanged", p, got, err)
		}
	}
	got, err := absTrace("trace.jsonl")
	if err != nil || !filepath.IsAbs(got) {
		t.Errorf("absTrace(trace.jsonl) = %q, %v; want an absolute path", got, err)
	}
}
