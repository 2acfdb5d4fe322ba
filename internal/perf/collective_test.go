package perf

import (
	"math"
	"testing"
)

func TestAllReduceNs(t *testing.T) {
	for _, c := range []struct {
		name  string
		bytes int64
		n     int
		bw    float64
		lat   int64
		want  int64
	}{
		// 2*(1/2)*1e6 B / 50e9 B/s = 20000 ns, + 2*1*2000.
		{"two ranks", 1_000_000, 2, 50e9, 2000, 20000 + 4000},
		// 2*(3/4)*1e6/50e9 s = 30000 ns; + 2*3*2000.
		{"four ranks", 1_000_000, 4, 50e9, 2000, 30000 + 12000},
		// 2*(7/8)*8e6/100e9 s = 140000 ns; + 14*500.
		{"eight ranks", 8_000_000, 8, 100e9, 500, 140000 + 7000},
		{"one rank", 1_000_000, 1, 50e9, 2000, 0},
		{"no bytes", 0, 4, 50e9, 2000, 0},
		{"no link", 10, 2, 0, 2000, math.MaxInt64},
	} {
		if got := AllReduceNs(c.bytes, c.n, c.bw, c.lat); got != c.want {
			t.Errorf("%s: AllReduceNs = %d, want %d", c.name, got, c.want)
		}
	}
	// (n-1)/n x bytes / bw + (n-1) x latency: 3/4 * 4e6 / 100e9 s = 30000 ns + 3*1000.
	if got := AllGatherNs(4_000_000, 4, 100e9, 1000); got != 33000 {
		t.Errorf("AllGatherNs = %d, want 33000", got)
	}
}

type fixed int64

func (f fixed) StepTime(*Batch) int64 { return int64(f) }

func TestWithCollectives(t *testing.T) {
	cfg := TPComm{TP: 2, Layers: 32, Hidden: 4096, BytesPerElem: 2, LinkBW: 64e9, LinkLatencyNs: 2000}
	b := &Batch{PrefillTokens: 6, PrefillSeqs: 1, NumDecode: 4, DecodeKVSum: 400}
	// 10 tokens x 4096 x 2 B = 81920 B: 2*(1/2)*81920/64e9 s = 1280 ns + 2*2000
	// = 5280 ns per all-reduce; 2 per layer + 1 after the embedding = 65.
	if got, want := WithCollectives(fixed(1000), cfg).StepTime(b), int64(1000+65*5280); got != want {
		t.Errorf("StepTime = %d, want %d", got, want)
	}
	// Logits gather: 5 sequences x 128000 x 2 B = 1280000 B:
	// (1/2)*1280000/64e9 s = 10000 ns + 2000.
	cfg.Vocab = 128000
	if got, want := WithCollectives(fixed(1000), cfg).StepTime(b), int64(1000+65*5280+12000); got != want {
		t.Errorf("StepTime with logits gather = %d, want %d", got, want)
	}
	// A collective scale of 1.5 multiplies the communication, not the
	// compute: (65*5280 + 12000) * 1.5 = 532800.
	cfg.Scale = 1.5
	if got, want := WithCollectives(fixed(1000), cfg).StepTime(b), int64(1000+532800); got != want {
		t.Errorf("StepTime with scale 1.5 = %d, want %d", got, want)
	}
	cfg.Scale = 0
	cfg.TP = 1
	if p := WithCollectives(fixed(7), cfg); p != fixed(7) {
		t.Errorf("tp1 wrapper = %v, want the predictor itself", p)
	}
	cfg.TP = 2
	if got := WithCollectives(fixed(0), cfg).StepTime(&Batch{}); got != 0 {
		t.Errorf("empty step = %d", got)
	}
}
