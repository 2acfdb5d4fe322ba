package calibrate

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/servesim/servesim/internal/perf"
)

func bucketReport(t *testing.T, r *perf.Roofline, p []perf.Point, key func(perf.Point) string) {
	m := map[string][]float64{}
	for _, x := range p {
		if x.Category != perf.CategoryAttention {
			continue
		}
		b := x.Batch()
		m[key(x)] = append(m[key(x)], r.OpNs(x.Op, &b)/x.Ns-1)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += fmt.Sprintf("%-24s %s\n", k, stats(m[k]))
	}
	t.Log("\n" + s)
}

func lg(v int) int {
	if v == 0 {
		return 0
	}
	return int(math.Round(math.Log2(float64(v))))
}

func attnDiag(t *testing.T, eff perf.Efficiency) {
	for _, c := range []struct {
		m   perf.RooflineModel
		dir string
		tp  int
	}{{llamaModel, "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1", 1}, {qwenModel, "RTXPRO6000/Qwen/Qwen3-32B/bf16/tp1", 1}} {
		r, _ := perf.NewRoofline(c.m, rtxpro, eff, c.tp)
		p := pts(t, c.dir)
		t.Log(c.dir)
		bucketReport(t, r, p, func(x perf.Point) string {
			kind := "mixed"
			if x.N == 0 {
				kind = "prefill"
			} else if x.PC == 0 {
				kind = "decode"
			}
			return fmt.Sprintf("%s pc2^%02d", kind, lg(x.PC))
		})
		bucketReport(t, r, p, func(x perf.Point) string {
			kind := "mixed"
			if x.N == 0 {
				kind = "prefill"
			} else if x.PC == 0 {
				kind = "decode"
			}
			return fmt.Sprintf("%s n2^%d kvd2^%02d", kind, lg(x.N), lg(x.KVD))
		})
	}
}
