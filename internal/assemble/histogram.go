package assemble

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/csvtable"
)

// histogramHeaders names the two accepted headers, for messages.
const histogramHeaders = "expert,count or layer,expert,count"

// readHistogram reads a measured expert-routing histogram: a CSV with the
// header "expert,count" (one row per expert, used for every MoE layer) or
// "layer,expert,count" (rows for every MoE layer and expert). It returns
// the counts by expert, or by layer then expert. Errors name file:line.
func readHistogram(path string, experts, layers int) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("moe.histogram: %w", err)
	}
	defer f.Close()
	t, err := csvtable.New(path, f)
	if err != nil {
		return nil, fmt.Errorf("%w; want the header %s", err, histogramHeaders)
	}
	header := strings.Join(t.Header(), ",")
	perLayer := false
	switch header {
	case "expert,count":
	case "layer,expert,count":
		perLayer = true
	default:
		return nil, fmt.Errorf("%s:1: header %q; want %s", path, header, histogramHeaders)
	}
	n := experts
	if perLayer {
		n = experts * layers
	}
	out := make([]float64, n)
	seen := make([]bool, n)
	for err := range t.Rows() {
		if err != nil {
			return nil, err
		}
		layer := 0
		if perLayer {
			if layer, err = histogramIndex(t, "layer"); err != nil {
				return nil, err
			}
		}
		idx, err := histogramIndex(t, "expert")
		if err != nil {
			return nil, err
		}
		count, err := strconv.ParseFloat(t.Str("count"), 64)
		if err != nil || !(count >= 0) || count > 1e18 {
			return nil, t.Errorf("count %q is not a number in [0, 1e18]", t.Str("count"))
		}
		if idx >= experts {
			return nil, t.Errorf("expert %d, but the model has %d experts (0-%d)", idx, experts, experts-1)
		}
		if perLayer {
			if layer >= layers {
				return nil, t.Errorf("layer %d, but the model has %d MoE layers (0-%d)", layer, layers, layers-1)
			}
			idx += layer * experts
		}
		if seen[idx] {
			return nil, t.Errorf("a second row for the same expert")
		}
		seen[idx] = true
		out[idx] = count
	}
	for i, ok := range seen {
		if !ok {
			if perLayer {
				return nil, fmt.Errorf("%s: no row for layer %d expert %d; give every layer and expert", path, i/experts, i%experts)
			}
			return nil, fmt.Errorf("%s: no row for expert %d; give every expert", path, i)
		}
	}
	return out, nil
}

// histogramIndex parses column c of the current row as an index >= 0.
func histogramIndex(t *csvtable.Table, c string) (int, error) {
	v, err := strconv.Atoi(t.Str(c))
	if err != nil || v < 0 {
		return 0, t.Errorf("%s %q is not an index >= 0", c, t.Str(c))
	}
	return v, nil
}
