package perf

import (
	"math"
	"testing"
)

// Each case is a hand computation of NewAllReduce's choice and time.
func TestAllReduceChoiceAndTime(t *testing.T) {
	pcieHost := Interconnect{LinkBW: 63e9}                // RTX PRO 6000 pair, no P2P
	pcieP2P := Interconnect{P2P: true, LinkBW: 63e9}      // same pair with P2P
	nvswitch := Interconnect{NVLink: true, LinkBW: 450e9} // H100 HGX
	const decode = 128 * 5120 * 2                         // Qwen3-32B, 128 tokens: 1,310,720 B
	for _, c := range []struct {
		name    string
		n       int
		link    Interconnect
		disable bool
		bytes   int64
		custom  bool
		want    int64
	}{
		// No P2P: NCCL through host memory at 0.75*63e9/2 = 23.625e9 B/s:
		// 15000 + 2*(1/2)*1310720/23.625e9 s = 15000 + 55480.4 ns.
		{"pcie host-staged decode", 2, pcieHost, false, decode, false, 70480},
		// P2P, two GPUs: custom one-shot at 47.25e9 B/s:
		// 8000 + 1*1310720/47.25e9 s = 8000 + 27740.1 ns.
		{"pcie p2p custom one-shot", 2, pcieP2P, false, decode, true, 35740},
		// Over the 8 MiB custom buffer: NCCL, 10000 + 16777216/47.25e9 s.
		{"pcie p2p large goes to NCCL", 2, pcieP2P, false, 16 << 20, true, 365073},
		// disable_custom_all_reduce: NCCL, 10000 + 27740.1.
		{"pcie p2p custom disabled", 2, pcieP2P, true, decode, false, 37740},
		// Four PCIe-only GPUs: no custom all-reduce; NCCL ring
		// 10000 + 2*(3/4)*1310720/47.25e9 s = 10000 + 41610.2.
		{"four pcie gpus", 4, pcieP2P, false, decode, false, 51610},
		// NVSwitch, 8 GPUs, 1 MiB >= 256 KiB: two-shot at 360e9 B/s:
		// 2*5000 + 2*(7/8)*1048576/360e9 s = 10000 + 5097.0.
		{"nvswitch two-shot", 8, nvswitch, false, 1 << 20, true, 15097},
		// 128 KiB < 256 KiB: one-shot, 5000 + 7*131072/360e9 s = 5000 + 2548.6.
		{"nvswitch one-shot", 8, nvswitch, false, 128 << 10, true, 7549},
		// World size 3 is not supported by the custom kernel: NCCL,
		// 8000 + 2*(2/3)*1048576/360e9 s = 8000 + 3883.6.
		{"three ranks nccl", 3, nvswitch, false, 1 << 20, false, 11884},
		{"one rank", 1, nvswitch, false, 1 << 20, false, 0},
		{"no bytes", 2, pcieP2P, false, 0, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := NewAllReduce(c.n, c.link, c.disable)
			if c.n > 1 && a.Custom != c.custom {
				t.Fatalf("custom all-reduce %v, want %v", a.Custom, c.custom)
			}
			if got := a.Ns(c.bytes); got != c.want {
				t.Fatalf("Ns(%d) = %d, want %d", c.bytes, got, c.want)
			}
		})
	}
}

// The logits all-gather: 128 seqs x 151936 vocab x 2 B = 38,895,616 B over
// the host-staged pair: 15000 + (1/2)*38895616/23.625e9 s = 15000 + 823187.6.
func TestAllReduceGather(t *testing.T) {
	a := NewAllReduce(2, Interconnect{LinkBW: 63e9}, false)
	if got := a.GatherNs(128 * 151936 * 2); got != 838188 {
		t.Fatalf("GatherNs = %d, want 838188", got)
	}
}

// A TP predictor with AR set charges 2 x layers + 1 all-reduces plus the
// gather: Qwen3-32B (64 layers), 128 decode tokens on the host-staged pair:
// 129 x 70480 + 838188 = 9,930,108 ns.
func TestCollectivesUseAllReduce(t *testing.T) {
	cfg := TPComm{TP: 2, Layers: 64, Hidden: 5120, BytesPerElem: 2, Vocab: 151936, AR: NewAllReduce(2, Interconnect{LinkBW: 63e9}, false)}
	p := WithCollectives(zeroPredictor{}, cfg)
	b := Batch{NumDecode: 128}
	if got := p.StepTime(&b); got != 129*70480+838188 {
		t.Fatalf("StepTime = %d, want %d", got, 129*70480+838188)
	}
}

type zeroPredictor struct{}

func (zeroPredictor) StepTime(*Batch) int64 { return 0 }

// The host-staged bus bandwidth default against public measurements of two
// PCIe Gen4 x16 GPUs without peer-to-peer (RTX 4090, p2pBandwidthLatencyTest
// in NVIDIA/nccl issue #814): copies staged through host memory move
// 21.1-30.5 GB/s per pair when both directions run at once, 10.55-15.25 GB/s
// per direction. A two-rank ring all-reduce sends in both directions at once
// and its busbw equals the per-direction rate, so the default,
// 0.75 * 31.5e9 / 2 = 11.8125e9 B/s, must lie inside that bracket; the ring
// time of a 1 MiB message then follows by hand: 15000 + 1048576/11.8125e9 s
// = 15000 + 88768.3 ns.
func TestHostStagedBusBWWithinMeasured(t *testing.T) {
	a := NewAllReduce(2, Interconnect{LinkBW: 31.5e9}, false)
	if a.Custom {
		t.Fatal("custom all-reduce chosen without peer-to-peer")
	}
	if a.BusBW != 11.8125e9 {
		t.Fatalf("BusBW = %g, want 11.8125e9", a.BusBW)
	}
	const lo, hi = 21.1e9 / 2, 30.5e9 / 2
	if a.BusBW < lo || a.BusBW > hi {
		t.Fatalf("BusBW = %g B/s outside the measured %g-%g B/s", a.BusBW, lo, hi)
	}
	if got := a.Ns(1 << 20); got != 103768 {
		t.Fatalf("Ns(1 MiB) = %d, want 103768", got)
	}
}

// A group spanning nodes runs NCCL's ring at its slowest link's rate, by
// hand: H100 (NVLink 450 GB/s, 400 Gb/s = 50 GB/s NIC, 2 µs):
// busbw = min(0.80 × 450, 0.75 × 50) = 37.5 GB/s, latency 8 + 2 = 10 µs;
// 1 MiB at n = 16: 10000 + 2 × 15/16 × 1048576 / 37.5e9 s = 62428.8 ns.
// With a NIC faster than the link the link bounds it.
func TestSpanningAllReduce(t *testing.T) {
	nvl := Interconnect{NVLink: true, P2P: true, LinkBW: 450e9}
	tests := []struct {
		name    string
		n       int
		intra   Interconnect
		nicBW   float64
		nicLat  int64
		bytes   int64
		busBW   float64
		wantNs  int64
		latency int64
	}{
		{"H100 tp16, NIC bound", 16, nvl, 50e9, 2000, 1 << 20, 37.5e9, 62429, 10_000},
		{"small message, latency", 16, nvl, 50e9, 2000, 16, 37.5e9, 10_001, 10_000},
		{"link bound (PCIe 31.5 GB/s, 100 GB/s NIC)", 4, Interconnect{P2P: true, LinkBW: 31.5e9}, 100e9, 2000, 1 << 20,
			0.75 * 31.5e9, 78_576, 12_000}, // 12000 + 1.5 × 1048576 / 23.625e9 s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewSpanningAllReduce(tt.n, tt.intra, tt.nicBW, tt.nicLat)
			if a.Custom {
				t.Errorf("custom all-reduce on a group spanning nodes")
			}
			if a.BusBW != tt.busBW || a.NCCLLatencyNs != tt.latency {
				t.Errorf("busbw %g latency %d, want %g %d", a.BusBW, a.NCCLLatencyNs, tt.busBW, tt.latency)
			}
			if got := a.Ns(tt.bytes); got != tt.wantNs {
				t.Errorf("Ns(%d) = %d, want %d", tt.bytes, got, tt.wantNs)
			}
		})
	}
}

// TestAllReduceWithByHand checks fitted constants replacing the link
// kind's defaults: 8 GPUs on NVLink of 900 GB/s, custom latency 7 µs,
// NCCL latency 20 µs, bus efficiency 0.5 (450 GB/s).
func TestAllReduceWithByHand(t *testing.T) {
	link := Interconnect{NVLink: true, P2P: true, LinkBW: 900e9}
	a := NewAllReduce(8, link, false).With(CollectiveEff{CustomLatencyNs: 7000, NCCLLatencyNs: 20000, BusEff: 0.5}, link)
	for _, c := range []struct {
		bytes int64
		want  float64
	}{
		// one-shot below 256 KiB: 7000 + 7·65536/450e9 s = 7000 + 1019.45 ns.
		{64 << 10, 7000 + 7*65536/450e9*1e9},
		// two-shot up to 8 MiB: 2·7000 + 2·7/8·1 MiB/450e9.
		{1 << 20, 14000 + 1.75*(1<<20)/450e9*1e9},
		// NCCL from 8 MiB: 20000 + 1.75·16 MiB/450e9.
		{16 << 20, 20000 + 1.75*(16<<20)/450e9*1e9},
	} {
		if got := float64(a.Ns(c.bytes)); math.Abs(got-c.want) > 1 {
			t.Errorf("%d bytes: %.0f ns, want %.0f", c.bytes, got, c.want)
		}
	}
	// Zero constants keep the defaults.
	if NewAllReduce(8, link, false).With(CollectiveEff{}, link) != NewAllReduce(8, link, false) {
		t.Error("zero CollectiveEff changed the all-reduce")
	}
}
