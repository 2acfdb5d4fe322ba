package perf

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func parseF(t testing.TB, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzTables feeds arbitrary bytes to every CSV parser: none may panic, and
// whatever parses must reproduce its samples at grid points and give
// lookups that do not panic anywhere.
func FuzzTables(f *testing.F) {
	for _, s := range []string{tinyDense, tinyPerSeq, tinyAttention, tinySkew,
		"tokens,activated_experts,time_us\n1,8,50\n2,8,56\n16,64,90\n",
		"layer,tokens,time_us\na,1,1\na,1,2\n", "", "layer,tokens\n", "\"", "a,b\n1\n"} {
		f.Add([]byte(s))
	}
	probe := []float64{-1, 0, 1, 7, 16, 1e6}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := readLayerCSV("d.csv", bytes.NewReader(data), "tokens"); err == nil {
			var terms []weighted
			for _, fn := range m {
				for i, x := range fn.xs {
					if got := fn.at(x); got != fn.ys[i] {
						t.Fatalf("at(%v) = %v want %v", x, got, fn.ys[i])
					}
				}
				terms = append(terms, weighted{2, fn})
			}
			s := sumPWL(terms)
			for _, x := range probe {
				_ = s.at(x)
			}
		}
		if a, err := readAttentionCSV("a.csv", bytes.NewReader(data)); err == nil {
			for _, x := range probe {
				for _, n := range []int{0, 1, 3} {
					_ = a.at(x, x, n, x)
				}
			}
		}
		if m, err := readMoECSV("m.csv", bytes.NewReader(data)); err == nil {
			for _, x := range probe {
				_ = m.at(x, x)
			}
		}
		meta := &bundleMeta{}
		meta.SkewFit.Enabled = true
		meta.SkewFit.BucketAxes = &skewAxesYAML{
			NBins: []float64{0, 2, 4, 1e6}, NLabels: []string{"n<=2", "n<=4", "n>4"},
			SkewRateBins: []float64{-0.01, 0.5, 1.01}, SkewRateLabels: []string{"sr<=50%", "sr>50%"},
			KVBigBins: []float64{0, 32, 1e9}, KVBigLabels: []string{"kvB<=32", "kvB>32"},
			KPBins: []float64{-1, 0, 1e9}, KPLabels: []string{"kp=0", "kp>0"},
		}
		meta.SkewFit.PerTP = map[int]skewTPFitYML{1: {}}
		s, err := newSkewTable(meta, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.readSkewFitCSV("s.csv", bytes.NewReader(data)); err == nil {
			for _, x := range probe {
				_ = s.skewAlpha(x, x, 3, x, 0, x+1)
			}
		}
	})
}
