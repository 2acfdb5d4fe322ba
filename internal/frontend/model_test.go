package frontend

import (
	"math"
	"slices"
	"strings"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

func f(v float64) *float64 { return &v }

// quiet is a configuration with round numbers and no drift, for hand
// computations.
func quiet() Config {
	return Config{RequestUs: f(300), TokenizeNsPerToken: f(1100), TokenizeBatchWaitUs: f(2000), EnqueueUs: f(50), HopUs: f(50),
		StepUs: f(100), OutputUs: f(15), ChunkUs: f(25), NetworkUs: f(50), JitterUs: f(0)}
}

// TestIngestTerms: the ingest of one request is request handling and the
// enqueue on the event loop, the tokenizer batcher's wait for more prompts,
// tokenisation per prompt token, then the hop to the engine core, all by
// hand.
func TestIngestTerms(t *testing.T) {
	noTok := func(c *Config) { c.TokenizeNsPerToken, c.TokenizeBatchWaitUs = f(0), f(0) }
	for _, c := range []struct {
		name  string
		cfg   func(*Config)
		input int
		want  int64 // ns from reaching the API server to reaching the engine core
	}{
		// 300 us + 50 us, the 2 ms batch window, 1.1 us x 1000, the 50 us hop.
		{"defaults", func(*Config) {}, 1000, 300_000 + 50_000 + 2_000_000 + 1_100_000 + 50_000},
		{"tokenise only", func(c *Config) { c.RequestUs, c.EnqueueUs, c.HopUs, c.TokenizeBatchWaitUs = f(0), f(0), f(0), f(0) }, 2048, 2048 * 1100},
		{"batch wait only", func(c *Config) { c.RequestUs, c.EnqueueUs, c.HopUs, c.TokenizeNsPerToken = f(0), f(0), f(0), f(0) }, 2048, 2_000_000},
		{"request only", func(c *Config) { noTok(c); c.EnqueueUs, c.HopUs = f(0), f(0) }, 5000, 300_000},
		{"enqueue only", func(c *Config) { noTok(c); c.RequestUs, c.HopUs = f(0), f(0) }, 5000, 50_000},
		{"hop only", func(c *Config) { noTok(c); c.RequestUs, c.EnqueueUs = f(0), f(0) }, 5000, 50_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := quiet()
			c.cfg(&cfg)
			m := New(cfg, 1, 1)
			if got := m.Ingest(0, c.input, 1_000_000) - 1_000_000; got != c.want {
				t.Fatalf("ingest of %d tokens took %d ns, want %d", c.input, got, c.want)
			}
		})
	}
}

// TestIngestSerialises: requests reaching one API server together are
// handled by its event loop one after the other, and tokenised in one
// batch by its tokenizer thread; with two servers, in parallel. By hand
// (us), three requests of 1,000 tokens at 0: the loop hands them to the
// batcher at 350, 700 and 1,050; the first opens the window [350, 2,350],
// the other two join it; the thread tokenises them one after the other
// from 2,350: ready at 3,450, 4,550 and 5,650, at the engine 50 later. A
// fourth at 3,500 leaves the loop at 3,850, after the window closed, and
// opens the next batch once the thread is free (5,650): 5,650 + 2,000 +
// 1,100 + 50 = 8,800.
func TestIngestSerialises(t *testing.T) {
	m := New(quiet(), 1, 1)
	for k, want := range []int64{3_500_000, 4_600_000, 5_700_000} {
		if got := m.Ingest(0, 1000, 0); got != want {
			t.Fatalf("request %d reaches the engine at %d ns, want %d", k+1, got, want)
		}
	}
	if got, want := m.Ingest(0, 1000, 3_500_000), int64(8_800_000); got != want {
		t.Fatalf("late request reaches the engine at %d, want %d", got, want)
	}
	cfg := quiet()
	cfg.APIServerCount = 2
	m = New(cfg, 1, 1)
	a, b := m.Assign(), m.Assign()
	if a == b || m.Assign() != a {
		t.Fatalf("assignment is not round-robin over 2 servers")
	}
	if m.Ingest(a, 1000, 0) != m.Ingest(b, 1000, 0) {
		t.Fatal("two servers do not ingest in parallel")
	}
}

// TestTokenizerBatches: a batch takes at most tokenize_batch_max prompts;
// the next prompt opens another batch when the thread is free; without a
// wait every prompt is its own batch, one after another on the thread.
func TestTokenizerBatches(t *testing.T) {
	cfg := quiet()
	cfg.TokenizeBatchMax = 2
	m := New(cfg, 1, 1)
	// 100 tokens = 110 us each. Window [0, 2,000]: prompts at 0 and 10
	// ready at 2,110 and 2,220; the third (at 20) finds the batch full and
	// opens the next when the thread is free: 2,220 + 2,000 + 110.
	for _, c := range []struct{ at, want int64 }{{0, 2_110_000}, {10_000, 2_220_000}, {20_000, 4_330_000}} {
		if got := m.Tokenize(0, 100, c.at); got != c.want {
			t.Fatalf("prompt at %d ready at %d, want %d", c.at, got, c.want)
		}
	}
	cfg = quiet()
	cfg.TokenizeBatchWaitUs = f(0)
	m = New(cfg, 1, 1)
	for _, c := range []struct{ at, want int64 }{{0, 110_000}, {50_000, 220_000}, {500_000, 610_000}} {
		if got := m.Tokenize(0, 100, c.at); got != c.want {
			t.Fatalf("no wait: prompt at %d ready at %d, want %d", c.at, got, c.want)
		}
	}
}

// TestStepTerms: one step's output work is the per-step cost, the
// per-request cost for every request with new tokens and the per-chunk
// cost for every chunk sent; it starts after the hop and the client gets
// the chunks a network time later.
func TestStepTerms(t *testing.T) {
	const end = int64(1e9)
	for _, c := range []struct {
		name                  string
		si                    int
		first, cont, finished int64
		wantWork              int64
	}{
		// 100 + 15 x 64 + 25 x 64 us.
		{"64 decodes", 1, 0, 64, 0, 100_000 + 15_000*64 + 25_000*64},
		// 2 first tokens, 60 further: every request sends a chunk.
		{"mixed", 1, 2, 60, 4, 100_000 + 15_000*62 + 25_000*62},
		// stream interval 4: 2 first chunks, 60/4 interval chunks and
		// the last chunks of 4 finishing requests (3/4 of a chunk each
		// beyond the expected 1/4): 2 + 15 + 3 = 20 chunks.
		{"interval 4", 4, 2, 60, 4, 100_000 + 15_000*62 + 25_000*20},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := quiet()
			cfg.StreamInterval = c.si
			m := New(cfg, 1, 1)
			m.Step(0, end, c.first, c.cont, c.finished, []Gap{{NS: 10_000_000, Count: c.cont}})
			if got, want := m.Delivered(0), end+50_000+c.wantWork+50_000; got != want {
				t.Fatalf("delivered at +%d ns, want +%d (work %d)", got-end, want-end, c.wantWork)
			}
		})
	}
}

// TestOutputDelaysIngest: a request reaching the API server while it
// processes a step's outputs waits for them (one CPU, first come first
// served), and the next step's outputs wait for that ingest.
func TestOutputDelaysIngest(t *testing.T) {
	m := New(quiet(), 1, 1)
	const end = int64(1e9)
	m.Step(0, end, 0, 100, 0, []Gap{{NS: 1e7, Count: 100}})
	busy := end + 50_000 + 100_000 + 40_000*100 // output work ends
	ingest := int64(300_000 + 50_000)           // on the loop; the batch wait and tokenising beside it
	if got, want := m.Ingest(0, 1000, end+60_000), busy+ingest+2_000_000+1_100_000+50_000; got != want {
		t.Fatalf("ingest behind the output work reaches the engine at %d, want %d", got, want)
	}
	// A step ending now waits for the ingest before its own outputs.
	m.Step(0, end+100_000, 0, 1, 0, []Gap{{NS: 100_000, Count: 1}})
	if got, want := m.Delivered(0), busy+ingest+100_000+15_000+25_000+50_000; got != want {
		t.Fatalf("the next step is delivered at %d, want %d", got, want)
	}
}

// TestClientGaps: the client sees each engine gap shifted by the change
// of the delivery delay between the two steps; with a stream interval of
// k, one gap of k engine gaps per k tokens.
func TestClientGaps(t *testing.T) {
	m := New(quiet(), 1, 1)
	const gap = int64(10_000_000)
	m.Step(0, gap, 0, 10, 0, []Gap{{NS: gap, Count: 10}}) // delay 50 + 100 + 400 us
	got := m.Step(0, 2*gap, 0, 20, 0, []Gap{{NS: gap, Count: 20}})
	// Delay now 50 + 100 + 800 us: 400 us more than the previous step.
	if len(got) != 1 || got[0] != (Gap{NS: gap + 400_000, Count: 20}) {
		t.Fatalf("client gaps %v, want [{%d 20}]", got, gap+400_000)
	}
	cfg := quiet()
	cfg.StreamInterval = 4
	m = New(cfg, 1, 1)
	var n int64
	for k := int64(1); k <= 4; k++ {
		for _, g := range m.Step(0, k*gap, 0, 10, 0, []Gap{{NS: gap, Count: 10}}) {
			if g.NS != 4*gap {
				t.Fatalf("chunk gap %d, want %d", g.NS, 4*gap)
			}
			n += g.Count
		}
	}
	if n != 10 { // 40 token gaps in chunks of 4
		t.Fatalf("%d chunk gaps over 4 steps of 10 requests, want 10", n)
	}
}

// TestJitter: drift off draws nothing; on, the draws are lognormal with
// the configured median and sigma, and the same seed draws the same.
func TestJitter(t *testing.T) {
	m := New(quiet(), 7, 1)
	for range 100 {
		if m.Jitter() != 0 || m.SendDelay() != 50_000 {
			t.Fatal("drift off still draws a delay")
		}
	}
	cfg := quiet()
	cfg.JitterUs, cfg.JitterSigma = f(200), f(1.5)
	a, b := New(cfg, 7, 1), New(cfg, 7, 1)
	const n = 20000
	var logs []float64
	var sum float64
	for range n {
		x, y := a.Jitter(), b.Jitter()
		if x != y {
			t.Fatal("same seed, different draws")
		}
		l := math.Log(float64(x))
		logs = append(logs, l)
		sum += l
	}
	mean := sum / n
	var v float64
	for _, l := range logs {
		v += (l - mean) * (l - mean)
	}
	sd := math.Sqrt(v / n)
	if math.Abs(math.Exp(mean)-200_000) > 200_000*0.05 || math.Abs(sd-1.5) > 0.05 {
		t.Fatalf("median %.0f ns, sigma %.3f; want 200000 and 1.5", math.Exp(mean), sd)
	}
}

// TestConfigValidate: defaults fill absent fields, explicit zeros stay,
// out-of-range values are errors naming the field.
func TestConfigValidate(t *testing.T) {
	r := Config{JitterUs: f(0)}.Resolved()
	if r.APIServerCount != 1 || r.StreamInterval != 1 || *r.RequestUs != DefaultRequestUs || *r.JitterUs != 0 || *r.JitterSigma != DefaultJitterSigma ||
		r.TokenizeBatchMax != 32 || *r.TokenizeBatchWaitUs != 2000 {
		t.Fatalf("resolved %+v", r)
	}
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{APIServerCount: -1}, "frontend.api_server_count"},
		{Config{StreamInterval: -2}, "frontend.stream_interval"},
		{Config{ChunkUs: f(-1)}, "frontend.chunk_us"},
		{Config{TokenizeNsPerToken: f(math.NaN())}, "frontend.tokenize_ns_per_token"},
		{Config{JitterSigma: f(9)}, "frontend.jitter_sigma"},
		{Config{TokenizeBatchMax: -1}, "frontend.tokenize_batch_max"},
		{Config{TokenizeBatchMax: MaxTokenizeBatch + 1}, "frontend.tokenize_batch_max"},
		{Config{TokenizeBatchWaitUs: f(-2)}, "frontend.tokenize_batch_wait_us"},
	} {
		var got []string
		c.cfg.Validate(func(field, format string, args ...any) { got = append(got, field) })
		if len(got) != 1 || got[0] != c.field {
			t.Errorf("%+v: errors on %v, want %s", c.cfg, got, c.field)
		}
	}
	var none []string
	quiet().Validate(func(field, format string, args ...any) { none = append(none, field) })
	if len(none) > 0 {
		t.Fatalf("valid config refused: %v", none)
	}
	if d := (Config{}).Describe(); !strings.Contains(d, "1 API server(s)") || !strings.Contains(d, "median 200 us") {
		t.Fatalf("describe: %s", d)
	}
}

// TestStepShiftIsStep: the one-server, every-token path gives the same
// delivery times and client gaps as the general one.
func TestStepShiftIsStep(t *testing.T) {
	a, b := New(Config{}, 3, 2), New(Config{}, 3, 2)
	if !a.Simple() {
		t.Fatal("the default model is not Simple")
	}
	end := int64(0)
	for k := int64(1); k <= 200; k++ {
		inst := int(k % 2)
		end += 3_000_000 + (k%7)*1_000_000
		first, cont := k%3, (k*37)%150
		gaps := []Gap{{NS: 20_000_000, Count: cont}}
		if k%11 == 0 {
			b.Ingest(0, int(k*13), end-500_000)
			a.Ingest(0, int(k*13), end-500_000)
		}
		d := a.StepShift(inst, end, first, cont)
		got := b.Step(inst, end, first, cont, k%2, gaps)
		if a.Delivered(0) != b.Delivered(0) {
			t.Fatalf("step %d: delivered %d vs %d", k, a.Delivered(0), b.Delivered(0))
		}
		if cont > 0 && (len(got) != 1 || got[0].NS != max(20_000_000+d, 0) || got[0].Count != cont) {
			t.Fatalf("step %d: gaps %v, shift %d", k, got, d)
		}
	}
}

// TestTokenizerProperties: for prompts given to one batcher in time order,
// results come back in that order, none before its arrival plus its own
// tokenisation nor before its batch's window has closed, a batch never
// holds more than tokenize_batch_max prompts, and without a wait the
// batcher is a first-come-first-served queue on one thread (Lindley's
// recursion).
func TestTokenizerProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := quiet()
		wait := rapid.Float64Range(0, 5000).Draw(rt, "wait")
		maxN := rapid.IntRange(1, 8).Draw(rt, "max")
		cfg.TokenizeBatchWaitUs, cfg.TokenizeBatchMax = f(wait), maxN
		m := New(cfg, 1, 1)
		serial := New(cfg, 1, 1)
		serial.tokWait = 0
		var at, prev, free int64
		for k := range rapid.IntRange(1, 60).Draw(rt, "n") {
			at += rapid.Int64Range(0, 3_000_000).Draw(rt, "gap")
			tokens := rapid.IntRange(0, 4000).Draw(rt, "tokens")
			got := m.Tokenize(0, tokens, at)
			if got < prev {
				rt.Fatalf("prompt %d ready at %d, before the one ahead of it (%d)", k, got, prev)
			}
			if got < at+m.TokenizeTime(tokens) {
				rt.Fatalf("prompt %d ready at %d, before its arrival %d plus its work", k, got, at)
			}
			if b := m.tok[0]; got < b.start+m.tokWait+m.TokenizeTime(tokens) {
				rt.Fatalf("prompt %d ready at %d, before its window [%d, +%d) closed plus its work", k, got, b.start, m.tokWait)
			}
			if n := m.tok[0].n; n < 1 || n > maxN {
				rt.Fatalf("the batch holds %d prompts, not in [1, %d]", n, maxN)
			}
			prev = got
			free = max(free, at) + serial.TokenizeTime(tokens)
			if s := serial.Tokenize(0, tokens, at); s != free {
				rt.Fatalf("without a wait prompt %d is ready at %d, want %d (FCFS)", k, s, free)
			}
		}
	})
}

// TestStepIgnoresGapOrder: the client-side gaps and delivery times depend
// only on the multiset of a step's engine gaps, not on their order nor on
// how equal gaps are split into runs (an engine may visit its running
// requests in any order). Two models with several API servers and a
// stream interval above 1 get the same steps, one with each step's gaps
// as sorted merged runs, the other shuffled and split.
func TestStepIgnoresGapOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := quiet()
		cfg.APIServerCount = rapid.IntRange(1, 4).Draw(rt, "servers")
		cfg.StreamInterval = rapid.IntRange(1, 5).Draw(rt, "interval")
		a, b := New(cfg, 1, 2), New(cfg, 1, 2)
		end := int64(0)
		for k := range rapid.IntRange(1, 30).Draw(rt, "steps") {
			end += rapid.Int64Range(1, 50_000_000).Draw(rt, "dt")
			var tokens []int64 // one engine gap a continuing request
			for range rapid.IntRange(0, 40).Draw(rt, "cont") {
				tokens = append(tokens, rapid.SampledFrom([]int64{1e6, 2e6, 5e6, 3e7}).Draw(rt, "gap"))
			}
			var split []Gap // runs in drawn order: equal neighbours merged
			for _, g := range tokens {
				if n := len(split); n > 0 && split[n-1].NS == g && rapid.Bool().Draw(rt, "merge") {
					split[n-1].Count++
				} else {
					split = append(split, Gap{NS: g, Count: 1})
				}
			}
			slices.Sort(tokens)
			var merged []Gap
			for _, g := range tokens {
				if n := len(merged); n > 0 && merged[n-1].NS == g {
					merged[n-1].Count++
				} else {
					merged = append(merged, Gap{NS: g, Count: 1})
				}
			}
			cont := int64(len(tokens))
			first := rapid.Int64Range(0, 5).Draw(rt, "first")
			fin := rapid.Int64Range(0, cont).Draw(rt, "finished")
			inst := k % 2
			want := slices.Clone(a.Step(inst, end, first, cont, fin, merged))
			got := b.Step(inst, end, first, cont, fin, split)
			if !slices.Equal(got, want) {
				rt.Fatalf("step %d: gaps %v from shuffled runs, %v from merged ones", k, got, want)
			}
			for s := range int32(cfg.APIServerCount) {
				if a.Delivered(s) != b.Delivered(s) {
					rt.Fatalf("step %d: server %d delivers at %d and %d", k, s, b.Delivered(s), a.Delivered(s))
				}
			}
		}
	})
}

// TestStepAllocatesNothing: a step of unsorted, split gaps (sorted and
// merged in place) allocates nothing once the model's scratch has grown.
func TestStepAllocatesNothing(t *testing.T) {
	cfg := quiet()
	cfg.APIServerCount, cfg.StreamInterval = 3, 4
	m := New(cfg, 1, 1)
	gaps := make([]Gap, 0, 8)
	end := int64(0)
	allocs := testing.AllocsPerRun(100, func() {
		end += 20_000_000
		gaps = append(gaps[:0], Gap{NS: 3e6, Count: 5}, Gap{NS: 1e6, Count: 7}, Gap{NS: 3e6, Count: 2}, Gap{NS: 2e6, Count: 9})
		m.Step(0, end, 1, 23, 2, gaps)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a step", allocs)
	}
}
