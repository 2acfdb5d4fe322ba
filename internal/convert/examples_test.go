package convert

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/runner"
)

// refused lists the example configs servesim must refuse, with the
// sections the error has to name.
var refused = map[string][]string{
	"single_node_cxl_instance.json":   {"cxl_mem", "nodes[0].instances[0].placement"},
	"single_node_pim_instance.json":   {"nodes[0].cpu_mem.pim_config", "nodes[0].power"},
	"single_node_power_instance.json": {"nodes[0].power"},
}

// exampleLimit is the number of requests each converted example runs.
const exampleLimit = 20

// TestExamplesConvertAndRun converts every LLMServingSim example config in
// testdata (copied from LLMServingSim, MIT licence beside them): the ones
// with PIM, CXL or power sections are refused naming those sections; every
// other one converts, loads with config.Parse, builds and runs a limited
// workload to completion.
func TestExamplesConvertAndRun(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d example configs in testdata, want the LLMServingSim set", len(files))
	}
	seen := map[string]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		seen[name] = true
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := LLMServingSim(data, Options{Name: name})
			if want, ok := refused[name]; ok {
				var ue *UnsupportedError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) {
					t.Fatalf("want an UnsupportedError, got %v", err)
				}
				for _, sec := range want {
					if !strings.Contains(err.Error(), sec) {
						t.Errorf("error %q does not name %s", err, sec)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("convert: %v", err)
			}
			s, err := config.Parse(res.YAML, name+".yaml")
			if err != nil {
				t.Fatalf("converted YAML does not load: %v\n%s", err, res.YAML)
			}
			s.Workload.Limit = exampleLimit
			s.CheckInvariants = true
			b, err := assemble.Build(s, config.Source{})
			if err != nil {
				t.Fatalf("build (predictor %s): %v\n%s", s.Predictor.Kind, err, res.YAML)
			}
			var gpus, pipelined int
			for _, in := range b.Instances() {
				gpus += in.TP * in.PP
				if in.PP > 1 {
					pipelined++
				}
			}
			wantGPUs, wantPipelined := exampleGPUs(t, data)
			if gpus != wantGPUs || pipelined != wantPipelined {
				t.Errorf("built %d GPUs in %d pipelined instances, want %d in %d (instances of tp_size x pp_size GPUs)\n%s",
					gpus, pipelined, wantGPUs, wantPipelined, res.YAML)
			}
			sum, err := runner.Run(b, runner.Options{})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if sum.RequestsTotal != exampleLimit || sum.Finished != exampleLimit {
				t.Fatalf("run: %d of %d requests finished (failed %d %v, rejected %d %v, stopped %q)",
					sum.Finished, sum.RequestsTotal, sum.Failed, sum.FailureReasons, sum.Rejected, sum.RejectionReasons, sum.Stopped)
			}
		})
	}
	for name := range refused {
		if !seen[name] {
			t.Errorf("refused example %s is missing from testdata", name)
		}
	}
}

// exampleGPUs counts the GPUs of an LLMServingSim cluster config (tp_size x
// pp_size per instance; num_npus when tp_size is absent) and its instances
// with pp_size > 1.
func exampleGPUs(t *testing.T, data []byte) (gpus, pipelined int) {
	t.Helper()
	var cl struct {
		Nodes []struct {
			Instances []struct {
				NumNPUs int `json:"num_npus"`
				TP      int `json:"tp_size"`
				PP      int `json:"pp_size"`
			} `json:"instances"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(data, &cl); err != nil {
		t.Fatalf("decode example: %v", err)
	}
	for _, n := range cl.Nodes {
		for _, in := range n.Instances {
			pp := max(in.PP, 1)
			if in.TP > 0 {
				gpus += in.TP * pp
			} else {
				gpus += in.NumNPUs
			}
			if pp > 1 {
				pipelined++
			}
		}
	}
	return gpus, pipelined
}
