package metrics

import (
	"bytes"
	"strings"
	"testing"
)

const seriesHeader = "t,instance,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct,handoff_queue,kv_used_blocks,kv_pinned_blocks,kv_cached_blocks,link_util\n"

// fakeInstance is the state a snapshot function reads.
type fakeInstance struct{ snap Snapshot }

func (f *fakeInstance) get() Snapshot { return f.snap }

func TestSeriesWriter(t *testing.T) {
	type step struct {
		at             int64 // ns
		inst           int   // index into instances
		prompt, gen    int
		running, waits int
		used           int
	}
	cases := []struct {
		name   string
		period int64
		steps  []step
		end    int64
		want   string
	}{
		{
			name:   "gap-and-boundary",
			period: 0, // default 1 s
			steps: []step{
				{at: 200e6, inst: 0, prompt: 1000, running: 1, used: 10},
				{at: 1e9, inst: 0, gen: 5, running: 2, used: 20},          // exactly on a boundary: counts in (0,1]
				{at: 1_500_000_000, inst: 1, prompt: 300, waits: 4},       // other instance
				{at: 4_200_000_000, inst: 0, gen: 7, running: 0, used: 5}, // after two idle seconds
			},
			end: 4_500_000_000,
			want: seriesHeader +
				"1.0,0,1000.0,5.0,2,0,20.00,0,20,0,0,0.000\n" +
				"1.0,7,0.0,0.0,0,0,0.00,0,0,0,0,0.000\n" +
				"2.0,0,0.0,0.0,2,0,20.00,0,20,0,0,0.000\n" +
				"2.0,7,300.0,0.0,0,4,0.00,0,0,0,0,0.000\n" +
				"3.0,0,0.0,0.0,2,0,20.00,0,20,0,0,0.000\n" +
				"3.0,7,0.0,0.0,0,4,0.00,0,0,0,0,0.000\n" +
				"4.0,0,0.0,0.0,2,0,20.00,0,20,0,0,0.000\n" +
				"4.0,7,0.0,0.0,0,4,0.00,0,0,0,0,0.000\n" +
				"5.0,0,0.0,7.0,0,0,5.00,0,5,0,0,0.000\n" +
				"5.0,7,0.0,0.0,0,4,0.00,0,0,0,0,0.000\n",
		},
		{
			name:   "half-second",
			period: 500e6,
			steps: []step{
				{at: 100e6, inst: 0, prompt: 10, running: 1, used: 50},
				{at: 600e6, inst: 1, gen: 3, running: 1, used: 1},
			},
			end: 1e9, // exactly a boundary: no partial row
			want: seriesHeader +
				"0.5,0,20.0,0.0,1,0,50.00,0,50,0,0,0.000\n" +
				"0.5,7,0.0,0.0,0,0,0.00,0,0,0,0,0.000\n" +
				"1.0,0,0.0,0.0,1,0,50.00,0,50,0,0,0.000\n" +
				"1.0,7,0.0,6.0,1,0,1.00,0,1,0,0,0.000\n",
		},
		{name: "no-time", end: 0, want: seriesHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			sw := NewSeriesWriter(&buf, c.period)
			insts := []*fakeInstance{{}, {}}
			insts[0].snap.KVTotalBlocks, insts[1].snap.KVTotalBlocks = 100, 100
			ivs := []*Interval{sw.Add(0, insts[0].get), sw.Add(7, insts[1].get)}
			for _, s := range c.steps {
				if err := sw.Advance(s.at); err != nil {
					t.Fatal(err)
				}
				ivs[s.inst].AddPromptTokens(s.prompt)
				ivs[s.inst].AddGenTokens(s.gen)
				sn := &insts[s.inst].snap
				sn.Running, sn.Waiting, sn.KVUsedBlocks = s.running, s.waits, s.used
			}
			if err := sw.Close(c.end); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
			if err := sw.Advance(c.end + 10e9); c.end > 0 && err == nil {
				t.Error("Advance after Close did not fail")
			}
		})
	}
}

func TestSeriesExtraColumnsAndNilSnapshot(t *testing.T) {
	var buf bytes.Buffer
	sw := NewSeriesWriter(&buf, 1e9)
	sw.Add(3, nil)
	sw.Add(4, func() Snapshot {
		return Snapshot{Running: 1, Waiting: 2, HandoffQueue: 3, KVUsedBlocks: 3, KVPinnedBlocks: 2, KVCachedBlocks: 9, KVTotalBlocks: 8}
	})
	if err := sw.Close(1); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if lines[1] != "1.0,3,0.0,0.0,0,0,0.00,0,0,0,0,0.000" || lines[2] != "1.0,4,0.0,0.0,1,2,37.50,3,3,2,9,0.000" {
		t.Errorf("got %q", lines[1:3])
	}
}

// TestSeriesOptionalColumns: the tier and swap columns come after the
// base columns, in that order, only when asked for; swap space is in GB
// (1e9 bytes) with three decimals.
func TestSeriesOptionalColumns(t *testing.T) {
	const base = "1.0,0,0.0,0.0,1,0,10.00,0,10,0,0,0.000"
	snap := func() Snapshot {
		// 3 swapped requests holding 50 blocks of 2 MiB: 104,857,600 B.
		return Snapshot{Running: 1, KVUsedBlocks: 10, KVTotalBlocks: 100, HostChunks: 4, DiskChunks: 5, TierLoading: 6,
			Swapped: 3, SwapUsedBytes: 50 * 2 << 20}
	}
	for _, tt := range []struct {
		name        string
		opts        []Option
		header, row string // after the base columns' header and row
	}{
		{"base", nil, "", ""},
		{"tiers", []Option{WithTierColumns()}, ",host_kv_chunks,disk_kv_chunks,tier_loading", ",4,5,6"},
		{"swap", []Option{WithSwapColumns()}, ",swapped_requests,swap_used_gb", ",3,0.105"},
		{"tiers and swap", []Option{WithSwapColumns(), WithTierColumns()},
			",host_kv_chunks,disk_kv_chunks,tier_loading,swapped_requests,swap_used_gb", ",4,5,6,3,0.105"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			sw := NewSeriesWriter(&buf, 1e9, tt.opts...)
			sw.Add(0, snap)
			if err := sw.Close(1); err != nil {
				t.Fatal(err)
			}
			want := strings.TrimSuffix(seriesHeader, "\n") + tt.header + "\n" + base + tt.row + "\n"
			if buf.String() != want {
				t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
			}
		})
	}
}
