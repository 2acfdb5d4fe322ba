package dbcheck

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/perf"
)

// fixed is a predictor of a fixed step time with a fixed communication
// part (through perf.WithCollectives of a 2-rank ring on 1 GB/s links and
// 0 latency: a step of T tokens of hidden 1 in 1-byte elements, no layers,
// pays one all-reduce of T bytes, 2·(1/2)·T/1e9 s = T ns).
type fixed int64

func (f fixed) StepTime(*perf.Batch) int64 { return int64(f) }

// TestStepsByHand checks a row's arithmetic: the roofline stand-in takes
// 1,000 ns plus its communication, the perfdb stand-in 1,500 ns plus the
// same; a prefill of 200 tokens communicates 200 ns on both.
func TestStepsByHand(t *testing.T) {
	comm := perf.TPComm{TP: 2, Layers: 0, Hidden: 1, BytesPerElem: 1, LinkBW: 1e9}
	build := func(c StepCase, kind string) (perf.Predictor, error) {
		if c.Hardware == "none" {
			return nil, errors.New("instances[0]: weights 9 GiB exceed the usable memory 8 GiB")
		}
		if kind == "roofline" {
			return perf.WithCollectives(fixed(1000), comm), nil
		}
		return perf.WithCollectives(fixed(1500), comm), nil
	}
	cases := []StepCase{{Hardware: "X", Model: "m", TP: 2}, {Hardware: "none", Model: "m", Quantization: "modelopt_fp4", TP: 1}}
	rows, skipped, err := Steps(cases, []StepShape{{Prefill: 200}}, build)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %+v, err %v", rows, err)
	}
	r := rows[0]
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"roofline us", r.RooflineUs, 1.2}, {"perfdb us", r.PerfDBUs, 1.7},
		{"roofline comm us", r.RooflineCommUs, 0.2}, {"perfdb comm us", r.PerfDBCommUs, 0.2},
		{"diff %", r.DiffPct, 100 * (1.7/1.2 - 1)}, {"rest %", r.RestDiffPct, 50},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if len(skipped) != 1 || skipped[0] != "none m nvfp4 tp 1: weights 9 GiB exceed the usable memory 8 GiB" {
		t.Errorf("skipped %q", skipped)
	}
	if _, _, err := Steps(cases[1:], []StepShape{{Prefill: 1}}, build); err == nil || !strings.Contains(err.Error(), "no case builds") {
		t.Errorf("no case builds: err %v", err)
	}
	var b strings.Builder
	if err := WriteSteps(&b, rows, skipped, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "prefill 200") || !strings.Contains(b.String(), "+41.7") {
		t.Errorf("table:\n%s", b.String())
	}
}
