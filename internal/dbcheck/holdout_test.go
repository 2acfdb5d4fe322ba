package dbcheck

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/perfdb"
)

// TestGEMMHoldoutSummary: one curve, m 1:15 2:12 16:14 17:30 64:40
// 65:50 128:60 µs (perfdb.TestGEMMHoldoutAgainstHandComputation has the
// predictions). m 17-256 holds out 17, 64 and 65: linear reads 18.77,
// 42.70 and 42.97, tile-64 18.77, 30 and 60, so tile-64 is farther on 64
// (-25 % against +6.76 %) and 65 (+20 % against -14.05 %), and its
// |errors| are 37.42, 25 and 20 %: median 25 %.
func TestGEMMHoldoutSummary(t *testing.T) {
	db := &perfdb.DB{System: "syn"}
	for _, p := range [][2]float64{{1, 15}, {2, 12}, {16, 14}, {17, 30}, {64, 40}, {65, 50}, {128, 60}} {
		db.GEMM = append(db.GEMM, perfdb.GEMMRow{Dtype: "bfloat16", M: int(p[0]), N: 1024, K: 1024, Ms: p[1] / 1e3})
	}
	groups := GEMMHoldout([]*perfdb.DB{db}, HoldoutByRange, perfdb.AxisM)
	if len(groups) != 2 || groups[0].Group != "m 2-16" || groups[0].Rows != 2 || groups[1].Group != "m 17-256" || groups[1].Rows != 3 {
		t.Fatalf("groups %+v", groups)
	}
	var tile HoldoutRule
	for _, r := range groups[1].Rules {
		if r.Rule == perfdb.GEMMTile64.String() {
			tile = r
		}
	}
	if tile.Closer != 0 || tile.Farther != 2 || math.Abs(tile.AbsMedian-25) > 1e-9 {
		t.Errorf("tile-64 over m 17-256: %+v; want closer 0, farther 2, |median| 25 %%", tile)
	}
	bySys := GEMMHoldout([]*perfdb.DB{db}, HoldoutBySystem, perfdb.AxisM)
	if len(bySys) != 2 || bySys[1].Group != "syn m 17-256" {
		t.Errorf("by system: %+v", bySys)
	}
	var b bytes.Buffer
	if err := WriteHoldout(&b, groups); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "m 17-256: 3 rows held out") {
		t.Errorf("text:\n%s", b.String())
	}
}
