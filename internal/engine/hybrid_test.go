package engine

import (
	"testing"

	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// heldPerStep runs one request alone and returns, for every batch formed,
// the tokens it had computed before the batch and the blocks its
// full-attention and local groups held once the batch was formed.
func heldPerStep(t *testing.T, cfg Config, prompt, output int) (computed, full, local []int) {
	t.Helper()
	e, err := New(0, cfg, fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	r := workload.Request{ID: 1, InputTokens: prompt, OutputTokens: output}
	if why := e.Unfit(&r); why != "" {
		t.Fatal(why)
	}
	slot := e.Add(&r, 0)
	now := int64(0)
	for e.HasWork() {
		before := int(e.slots[slot].computed)
		d, ok := begin(e, now)
		if !ok {
			t.Fatalf("no batch at t=%d", now)
		}
		computed = append(computed, before)
		full = append(full, len(e.slots[slot].blocks))
		local = append(local, e.LocalBlocks())
		if used := e.Pool().Used(); used != full[len(full)-1]+local[len(local)-1] {
			t.Fatalf("pool uses %d blocks, the request holds %d + %d", used, full[len(full)-1], local[len(local)-1])
		}
		now += d
		finish(e, now)
		if e.err != nil {
			t.Fatal(e.err)
		}
	}
	if e.Pool().Free() != cfg.NumBlocks {
		t.Fatalf("%d of %d blocks free after the run", e.Pool().Free(), cfg.NumBlocks)
	}
	return computed, full, local
}

// at returns the index of the step that started with c tokens computed.
func at(t *testing.T, computed []int, c int) int {
	t.Helper()
	for i, v := range computed {
		if v == c {
			return i
		}
	}
	t.Fatalf("no step starts at %d computed tokens (%v...)", c, computed[:min(len(computed), 8)])
	return -1
}

// TestSlidingWindowBlocksByHand follows one gpt-oss request (one full and
// one sliding-window group, W = 128, blocks of 16) through a chunked
// prefill of 5,000 tokens at 2,048 per step and its decode. Before each
// step vLLM frees the window blocks whose tokens are all before
// c - W + 1 (c computed tokens: ⌊(c - 127)/16⌋ leading blocks), then both
// groups take blocks up to ⌈(c + n)/16⌉:
//
//	c      n     full ⌈(c+n)/16⌉   skipped ⌊(c-127)/16⌋   local
//	0      2048  128               0                      128
//	2048   2048  256               120                    136
//	4096   904   313               248                    65
//	5000   1     313               304                    9
//	5007   1     313               305                    8
//	5100   1     319               310                    9
//
// In decode the window group holds ⌈W/16⌉ + 1 = 9 blocks, or 8 when the
// window starts on a block boundary.
func TestSlidingWindowBlocksByHand(t *testing.T) {
	cfg := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 2048, BlockSize: 16, NumBlocks: 2000,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true, Local: LocalKV{Groups: 1, Window: 128}}
	computed, full, local := heldPerStep(t, cfg, 5000, 200)
	for _, w := range []struct{ c, full, local int }{
		{0, 128, 128}, {2048, 256, 136}, {4096, 313, 65}, {5000, 313, 9}, {5007, 313, 8}, {5100, 319, 9},
	} {
		i := at(t, computed, w.c)
		if full[i] != w.full || local[i] != w.local {
			t.Errorf("at %d computed tokens: full %d, local %d blocks; want %d, %d", w.c, full[i], local[i], w.full, w.local)
		}
	}
}

// TestChunkedLocalBlocksByHand follows one Llama 4 request (one full and
// three chunked-local groups, chunks of 8,192 tokens, blocks of 16): its
// chunked groups keep every block of the current chunk and drop them all
// when the next chunk starts (vLLM skips the tokens before ⌊c/8192⌋·8192).
//
//	c      full ⌈(c+1)/16⌉   skipped   local (3 groups)
//	0      507 (prompt 8100) 0         3·507 = 1521
//	8191   512               0         3·512 = 1536
//	8192   513               512       3·1   = 3
//	8208   514               512       3·2   = 6
func TestChunkedLocalBlocksByHand(t *testing.T) {
	cfg := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 8192, BlockSize: 16, NumBlocks: 4000,
		ChunkedPrefill: true, CheckInvariants: true, Local: LocalKV{Groups: 3, Window: 8192, Chunked: true}}
	computed, full, local := heldPerStep(t, cfg, 8100, 120)
	for _, w := range []struct{ c, full, local int }{
		{0, 507, 1521}, {8191, 512, 1536}, {8192, 513, 3}, {8208, 514, 6},
	} {
		i := at(t, computed, w.c)
		if full[i] != w.full || local[i] != w.local {
			t.Errorf("at %d computed tokens: full %d, local %d blocks; want %d, %d", w.c, full[i], local[i], w.full, w.local)
		}
	}
}

// TestLocalTransferBlocksByHand: a handoff moves a sliding group's last
// ⌈128/16⌉ + 1 = 9 blocks (vLLM's get_sw_clipped_blocks), fewer when
// fewer cross; a chunked group's blocks of the prompt's last chunk.
func TestLocalTransferBlocksByHand(t *testing.T) {
	for _, c := range []struct {
		local          LocalKV
		prompt, blocks int
		want           int
	}{
		{LocalKV{Groups: 1, Window: 128}, 5000, 313, 9},
		{LocalKV{Groups: 1, Window: 128}, 5000, 4, 4},
		{LocalKV{Groups: 3, Window: 8192, Chunked: true}, 8100, 507, 507},  // one chunk: all of it
		{LocalKV{Groups: 3, Window: 8192, Chunked: true}, 10000, 625, 113}, // 625 - 8192/16
		{LocalKV{}, 10000, 625, 0},
	} {
		cfg := testConfig()
		cfg.Local = c.local
		e, err := New(0, cfg, fixedStep{base: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.LocalTransferBlocks(c.prompt, c.blocks); got != c.want {
			t.Errorf("%+v, prompt %d, %d blocks: %d local blocks moved, want %d", c.local, c.prompt, c.blocks, got, c.want)
		}
	}
}

// TestHybridConservesBlocks: random hybrid engines (one to six local
// groups, sliding or chunked, small pools so that requests are preempted,
// prefix caching on or off) run random requests to the end with the
// invariant check after every step (blocks conserved, never over
// capacity, none released twice, local tables matching the full ones),
// finish every request and end with the whole pool free.
func TestHybridConservesBlocks(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := drawConfig(rt, 1)
		cfg.Local = LocalKV{Groups: rapid.IntRange(1, 6).Draw(rt, "groups"), Window: rapid.IntRange(1, 100).Draw(rt, "window"), Chunked: rapid.Bool().Draw(rt, "chunked")}
		probe, err := New(0, cfg, fixedStep{base: 1})
		if err != nil {
			rt.Fatal(err)
		}
		cfg.NumBlocks += cfg.Local.Groups * probe.localPeak()
		e, err := New(0, cfg, fixedStep{base: 100, perTok: 1})
		if err != nil {
			rt.Fatal(err)
		}
		reqs := drawRequests(rt, e, false)
		for i := range reqs {
			e.Add(&reqs[i], reqs[i].Arrival)
		}
		now, finished := int64(0), 0
		for steps := 0; e.HasWork(); steps++ {
			d, ok := begin(e, now)
			if !ok {
				rt.Fatalf("stalled with %d running, %d waiting", e.Running(), e.Waiting())
			}
			if e.Pool().Used() > cfg.NumBlocks || e.Pool().Free() < 0 {
				rt.Fatalf("pool uses %d of %d blocks", e.Pool().Used(), cfg.NumBlocks)
			}
			now += d
			r := finish(e, now)
			if e.err != nil {
				rt.Fatal(e.err)
			}
			finished += len(r.Finished)
			if steps > 100000 {
				rt.Fatal("no progress")
			}
		}
		if err := e.CheckNow(now); err != nil {
			rt.Fatal(err)
		}
		if finished != len(reqs) || e.Pool().Free() != cfg.NumBlocks || e.LocalBlocks() != 0 {
			rt.Fatalf("finished %d of %d; %d of %d blocks free, %d local held", finished, len(reqs), e.Pool().Free(), cfg.NumBlocks, e.LocalBlocks())
		}
	})
}

// Local KV cache groups are refused with swap preemption (a swap moves a
// request's full-attention blocks only) and with a window under a token.
func TestLocalKVConfigRefused(t *testing.T) {
	for _, c := range []struct {
		local LocalKV
		swap  int
	}{
		{LocalKV{Groups: 1, Window: 128}, 100},
		{LocalKV{Groups: 1}, 0},
		{LocalKV{Groups: -1, Window: 128}, 0},
	} {
		cfg := testConfig()
		cfg.Local, cfg.SwapBlocks = c.local, c.swap
		if _, err := New(0, cfg, fixedStep{base: 1}); err == nil {
			t.Errorf("%+v with %d swap blocks accepted", c.local, c.swap)
		}
	}
}
