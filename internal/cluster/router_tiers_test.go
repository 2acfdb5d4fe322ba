package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/workload"
)

// fakeView is a View with fixed per-instance figures.
type fakeView struct {
	load    []int
	waiting []int64
	gpu     []int
	tiered  []float64
}

func (v fakeView) Load(i int) int                                        { return v.load[i] }
func (v fakeView) FreeKV(int) int                                        { return 0 }
func (v fakeView) PrefixHitTokens(i int, _ *workload.Request) int        { return v.gpu[i] }
func (v fakeView) TieredPrefixTokens(i int, _ *workload.Request) float64 { return v.tiered[i] }
func (v fakeView) WaitingTokens(i int) int64                             { return v.waiting[i] }

func TestTierAwareRouting(t *testing.T) {
	req := &workload.Request{InputTokens: 1000}
	c := []int{0, 1, 2}
	for _, tc := range []struct {
		name   string
		router Router
		v      fakeView
		want   int
	}{
		{"prefix-affinity: a host-held prefix weighted 0.87 beats a shorter GPU one", PrefixAffinity{},
			fakeView{load: []int{0, 0, 0}, waiting: []int64{0, 0, 0}, gpu: []int{256, 0, 0}, tiered: []float64{256, 512 * 0.87, 0}}, 1},
		{"prefix-affinity: a prefix on a slow disk (weight 0) counts nothing", PrefixAffinity{},
			fakeView{load: []int{3, 0, 1}, waiting: []int64{0, 0, 0}, gpu: []int{256, 0, 0}, tiered: []float64{256, 0, 0}}, 0},
		{"prefix-affinity: ties go to the least loaded", PrefixAffinity{},
			fakeView{load: []int{3, 2, 1}, waiting: []int64{0, 0, 0}, gpu: []int{0, 0, 0}, tiered: []float64{0, 0, 0}}, 2},
		// Costs: 10000 + 1000 - 512 = 10488; 0 + 1000 - 0 = 1000; 600 + 1000 - 768 = 832.
		{"kv-aware: queued work outweighs a cached prefix", KVAware{},
			fakeView{load: []int{5, 0, 1}, waiting: []int64{10000, 0, 600}, gpu: []int{512, 0, 256}, tiered: []float64{512, 0, 768}}, 2},
		// Costs 1000 - 0 = 1000 and 500 + 1000 - 500 = 1000: tie, less loaded.
		{"kv-aware: equal costs go to the least loaded", KVAware{},
			fakeView{load: []int{4, 2, 9}, waiting: []int64{0, 500, 0}, gpu: []int{0, 500, 0}, tiered: []float64{0, 500, 0}}, 1},
	} {
		if got := tc.router.Route(req, c, tc.v); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}
