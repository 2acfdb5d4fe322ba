package metrics

import (
	"math"
	"testing"
)

func TestStats(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name string
		in   []float64
		want Stat
	}{
		{"empty", nil, Stat{}},
		{"all-nan", []float64{nan}, Stat{}},
		{"single", []float64{5}, Stat{Count: 1, Mean: 5, Min: 5, P50: 5, P90: 5, P95: 5, P99: 5, Max: 5}},
		// numpy.percentile([1,2,3,4], [50,90,95,99]) = [2.5, 3.7, 3.85, 3.97]
		{"four", []float64{4, 2, 1, 3}, Stat{Count: 4, Mean: 2.5, Min: 1, P50: 2.5, P90: 3.7, P95: 3.85, P99: 3.97, Max: 4}},
		// numpy.percentile([1,7,10], [50,90,95,99]) = [7, 9.4, 9.7, 9.94]
		{"three-nan", []float64{10, nan, 1, 7}, Stat{Count: 3, Mean: 6, Min: 1, P50: 7, P90: 9.4, P95: 9.7, P99: 9.94, Max: 10}},
		// numpy.percentile(range(0, 101), q) = q; mean 50
		{"zero-to-100", seq(0, 100), Stat{Count: 101, Mean: 50, Min: 0, P50: 50, P90: 90, P95: 95, P99: 99, Max: 100}},
		// numpy.percentile(range(1, 11), [50,90,95,99]) = [5.5, 9.1, 9.55, 9.91]
		{"one-to-10", seq(1, 10), Stat{Count: 10, Mean: 5.5, Min: 1, P50: 5.5, P90: 9.1, P95: 9.55, P99: 9.91, Max: 10}},
		{"equal", []float64{3, 3, 3}, Stat{Count: 3, Mean: 3, Min: 3, P50: 3, P90: 3, P95: 3, P99: 3, Max: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]float64(nil), c.in...)
			got := Stats(c.in)
			if !statClose(got, c.want, 1e-12) {
				t.Errorf("Stats(%v)\n got %+v\nwant %+v", c.in, got, c.want)
			}
			for i := range in {
				if in[i] != c.in[i] && !(math.IsNaN(in[i]) && math.IsNaN(c.in[i])) {
					t.Fatalf("input modified")
				}
			}
		})
	}
}

func TestPercentileEdges(t *testing.T) {
	x := []float64{1, 2, 3}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {100, 3}, {-5, 1}, {150, 3}, {25, 1.5}, {75, 2.5}} {
		if got := Percentile(x, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty percentile not 0")
	}
}

func seq(a, b int) []float64 {
	var s []float64
	for i := a; i <= b; i++ {
		s = append(s, float64(i))
	}
	return s
}

func statClose(a, b Stat, tol float64) bool {
	if a.Count != b.Count {
		return false
	}
	av := []float64{a.Mean, a.Min, a.P50, a.P90, a.P95, a.P99, a.Max}
	bv := []float64{b.Mean, b.Min, b.P50, b.P90, b.P95, b.P99, b.Max}
	for i := range av {
		if math.Abs(av[i]-bv[i]) > tol*math.Max(1, math.Abs(bv[i])) {
			return false
		}
	}
	return true
}
