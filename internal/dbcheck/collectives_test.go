package dbcheck

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
)

// TestCollectivesEmbedded checks the tp 2 all-reduce table of the RTX PRO
// 6000 against the raw rows and the collective model by hand.
func TestCollectivesEmbedded(t *testing.T) {
	db, err := perfdb.Open(perfdb.Embedded(), "rtx_pro_6000_server", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		link perf.Interconnect
		// want is the modelled time of 1 MiB, µs.
		want float64
	}{
		// No peer-to-peer: NCCL staged through host memory, bus bandwidth
		// 0.75 × 63 GB/s / 2, 15 µs latency: 15 + 1 MiB / 23.625 GB/s.
		{"host path", perf.Interconnect{LinkBW: 63e9}, 15 + float64(1<<20)/23.625e9*1e6},
		// Peer-to-peer: the custom kernel one-shot, 8 µs + 1 MiB / 47.25 GB/s.
		{"p2p", perf.Interconnect{P2P: true, LinkBW: 63e9}, 8 + float64(1<<20)/47.25e9*1e6},
	} {
		tab, err := Collectives(db, 2, c.link, perf.CollectiveEff{})
		if err != nil {
			t.Fatal(err)
		}
		coll := db.Collectives(2)
		var mib *CollectiveRow
		for i, r := range tab.Rows {
			if i > 0 && r.Bytes <= tab.Rows[i-1].Bytes {
				t.Fatalf("%s: sizes not increasing at %d", c.name, r.Bytes)
			}
			if r.Bytes == 1<<20 {
				mib = &tab.Rows[i]
			}
			// The graph rows are what the perfdb predictor reads, made
			// non-decreasing in the size: each lowered to the smallest
			// time at any larger size.
			if r.VLLMGraphUs != nil {
				want := *r.VLLMGraphUs
				for _, later := range tab.Rows[i:] {
					if later.VLLMGraphUs != nil {
						want = min(want, *later.VLLMGraphUs)
					}
				}
				ns, ok := coll.AllReduce(true, r.Bytes)
				if !ok || math.Abs(ns/1e3-want) > 1e-9 {
					t.Errorf("%s: %d B: graph rows' envelope %g µs, predictor lookup %g ns (%v)", c.name, r.Bytes, want, ns, ok)
				}
			}
		}
		if mib == nil || mib.VLLMGraphUs == nil || mib.NCCLUs == nil || mib.VLLMEagerUs == nil {
			t.Fatalf("%s: no complete 1 MiB row: %+v", c.name, mib)
		}
		// custom_allreduce_perf stores elements: 1 MiB of bf16 is 524288.
		var raw float64
		for _, r := range db.CustomAR {
			if r.GPUs == 2 && r.Backend == "vllm_graph" && r.Size == 1<<19 {
				raw = r.Ms * 1e3
			}
		}
		if raw == 0 || *mib.VLLMGraphUs != raw {
			t.Errorf("%s: 1 MiB graph %g µs, raw row %g", c.name, *mib.VLLMGraphUs, raw)
		}
		if math.Abs(mib.ModelUs-c.want) > 1e-3 {
			t.Errorf("%s: modelled 1 MiB %g µs, want %g", c.name, mib.ModelUs, c.want)
		}
	}
	if _, err := Collectives(db, 3, perf.Interconnect{LinkBW: 63e9}, perf.CollectiveEff{}); err == nil || !strings.Contains(err.Error(), "no all-reduce rows for 3 GPUs (it has [2 4 8])") {
		t.Errorf("3 GPUs: %v", err)
	}
	if _, err := Collectives(db, 1, perf.Interconnect{LinkBW: 63e9}, perf.CollectiveEff{}); err == nil {
		t.Error("1 GPU: no error")
	}
}

func TestInventoryEmbedded(t *testing.T) {
	all, err := Inventory(perfdb.Embedded(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(perfdb.EmbeddedSystems()) {
		t.Errorf("%d systems, want %d", len(all), len(perfdb.EmbeddedSystems()))
	}
	one, err := Inventory(perfdb.Embedded(), "rtx_pro_6000_server", "")
	if err != nil || len(one) != 1 {
		t.Fatalf("rtx_pro_6000_server: %v, %d systems", err, len(one))
	}
	s := one[0]
	if !slices.Contains(s.Sources["context_attention_perf"], "vllm_flash_attn") || !slices.Equal(s.Versions["gemm/vllm"], []string{"0.19.0", "0.24.0"}) {
		t.Errorf("rtx_pro_6000_server: sources %v versions %v", s.Sources, s.Versions)
	}
	for _, tb := range s.Tables {
		if tb.Rows == 0 {
			t.Errorf("%s: no rows", tb.Name)
		}
	}
	if _, err := Inventory(perfdb.Embedded(), "h999", ""); err == nil || !strings.Contains(err.Error(), "no system h999") {
		t.Errorf("unknown system: %v", err)
	}
}
