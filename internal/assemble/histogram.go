package assemble

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

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
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w; want the header expert,count or layer,expert,count", path, err)
	}
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
	perLayer := false
	switch strings.Join(header, ",") {
	case "expert,count":
	case "layer,expert,count":
		perLayer = true
	default:
		return nil, fmt.Errorf("%s:1: header %q; want expert,count or layer,expert,count", path, strings.Join(header, ","))
	}
	n := experts
	if perLayer {
		n = experts * layers
	}
	out := make([]float64, n)
	seen := make([]bool, n)
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d (%s)", path, line, len(rec), len(header), strings.Join(header, ","))
		}
		ints := make([]int, len(rec)-1)
		for i := range ints {
			v, err := strconv.Atoi(strings.TrimSpace(rec[i]))
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%s:%d: %s %q is not an index >= 0", path, line, header[i], rec[i])
			}
			ints[i] = v
		}
		count, err := strconv.ParseFloat(strings.TrimSpace(rec[len(rec)-1]), 64)
		if err != nil || !(count >= 0) || count > 1e18 {
			return nil, fmt.Errorf("%s:%d: count %q is not a number in [0, 1e18]", path, line, rec[len(rec)-1])
		}
		idx := ints[len(ints)-1]
		if idx >= experts {
			return nil, fmt.Errorf("%s:%d: expert %d, but the model has %d experts (0-%d)", path, line, idx, experts, experts-1)
		}
		if perLayer {
			if ints[0] >= layers {
				return nil, fmt.Errorf("%s:%d: layer %d, but the model has %d MoE layers (0-%d)", path, line, ints[0], layers, layers-1)
			}
			idx += ints[0] * experts
		}
		if seen[idx] {
			return nil, fmt.Errorf("%s:%d: a second row for the same expert", path, line)
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
