package runner

import (
	"runtime"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/frontend"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
)

// shareGPTScenario is examples/bench-100k.yaml: one RTX PRO 6000 serving
// Llama-3.1-8B, ShareGPT-like lognormal lengths (sigma 1.0, mean prompt
// 1,000, mean output 250) with Poisson arrivals at 5.8 req/s, about 85 % of
// the instance's capacity (6.8 req/s when saturated). edit, when not nil,
// changes the scenario before it is validated.
func shareGPTScenario(b *testing.B, n int, edit func(*config.Scenario)) *assemble.Built {
	s := config.Default()
	syn := workload.ShareGPTLike(n, 5.8)
	s.Workload.Trace, s.Workload.Synthetic = "", &syn
	s.Seed = 7
	// The example's batch limits (vLLM's defaults for this card are
	// 1024 and 8192).
	s.Engine.MaxNumSeqs, s.Engine.MaxNumBatchedTokens = 256, 2048
	if edit != nil {
		edit(s)
	}
	s.FillGroups()
	if err := s.Validate(); err != nil {
		b.Fatal(err)
	}
	built, err := assemble.Build(s, config.Source{})
	if err != nil {
		b.Fatal(err)
	}
	return built
}

// exampleScenario loads examples/NAME.yaml, lets edit (when not nil)
// change it, and builds it.
func exampleScenario(b *testing.B, name string, edit func(*config.Scenario)) *assemble.Built {
	s, _, err := config.Load("../../examples/" + name + ".yaml")
	if err != nil {
		b.Fatal(err)
	}
	if edit != nil {
		edit(s)
	}
	built, err := assemble.Build(s, config.Source{Dir: "../../examples"})
	if err != nil {
		b.Fatal(err)
	}
	return built
}

// runAll runs built and fails unless every request finished; it returns
// the number of requests.
func runAll(b *testing.B, built *assemble.Built) int64 {
	res, err := Run(built, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if res.Finished != res.RequestsTotal {
		b.Fatalf("finished %d of %d", res.Finished, res.RequestsTotal)
	}
	return res.RequestsTotal
}

// benchRuns runs the scenario build returns b.N times, each to the end of
// its n requests, and reports the simulated requests per wall-second and
// the heap in use at the end.
func benchRuns(b *testing.B, n int64, build func() *assemble.Built) {
	var reqs int64
	for i := 0; i < b.N; i++ {
		if got := runAll(b, build()); got != n {
			b.Fatalf("%d requests, want %d", got, n)
		}
		reqs += n
	}
	reportRate(b, reqs, true)
}

// reportRate reports the simulated requests per wall-second of b's
// iterations, reqs in all, and with heap the heap in use at the end.
func reportRate(b *testing.B, reqs int64, heap bool) {
	b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
	if heap {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/1e6, "heapMB")
	}
}

// BenchmarkSimulate100k simulates 100,000 requests per iteration and
// reports simulated requests per wall-second and the heap in use at the
// end. Run: go test ./internal/runner -run '^$' -bench Simulate100k -benchtime 1x
func BenchmarkSimulate100k(b *testing.B) {
	const n = 100_000
	benchRuns(b, n, func() *assemble.Built { return shareGPTScenario(b, n, nil) })
}

// BenchmarkSimulateRoofline100k is examples/bench-100k-roofline.yaml:
// BenchmarkSimulate100k's workload with the roofline predictor, for the
// roofline's step cost against the profile predictor's.
// Run: go test ./internal/runner -run '^$' -bench 'Simulate(Roofline)?100k$' -benchtime 1x
func BenchmarkSimulateRoofline100k(b *testing.B) {
	benchRuns(b, 100_000, func() *assemble.Built { return exampleScenario(b, "bench-100k-roofline", nil) })
}

// BenchmarkSimulateFrontEnd100k is BenchmarkSimulate100k with the served
// endpoint's front end (frontend: {}), for the front end's cost (see
// docs/client.md).
// Run: go test ./internal/runner -run '^$' -bench 'Simulate(FrontEnd)?100k$' -benchtime 1x
func BenchmarkSimulateFrontEnd100k(b *testing.B) {
	const n = 100_000
	benchRuns(b, n, func() *assemble.Built {
		return shareGPTScenario(b, n, func(s *config.Scenario) { s.FrontEnd = &frontend.Config{} })
	})
}

// BenchmarkSimulatePD100k is examples/bench-pd-4p4d.yaml: 4 prefill + 4
// decode instances, 100,000 ShareGPT-like requests at 59 req/s (about 85 %
// of the cluster's saturated 70 req/s), pull handoff.
// Run: go test ./internal/runner -run '^$' -bench SimulatePD100k -benchtime 1x
func BenchmarkSimulatePD100k(b *testing.B) {
	benchRuns(b, 100_000, func() *assemble.Built { return exampleScenario(b, "bench-pd-4p4d", nil) })
}

// BenchmarkSimulateScale runs the first 200,000 requests of the 1M-request
// cluster examples (examples/bench-1m-32mixed.yaml, 32 mixed instances,
// and examples/bench-1m-16p16d.yaml, 16 prefill + 16 decode) and reports
// the wall time per simulated request.
// Run: go test ./internal/runner -run '^$' -bench SimulateScale -benchtime 1x
func BenchmarkSimulateScale(b *testing.B) {
	const n = 200_000
	for _, name := range []string{"bench-1m-32mixed", "bench-1m-16p16d"} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				built := exampleScenario(b, name, func(s *config.Scenario) { s.Workload.Synthetic.Requests = n })
				if reqs := runAll(b, built); reqs != n {
					b.Fatalf("%d requests, want %d", reqs, n)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(n*b.N), "us/req")
		})
	}
}

// BenchmarkSimulateMoE100k is examples/moe-dp2ep2.yaml: Qwen3-30B-A3B as
// one DP2 x EP2 instance (two lockstep ranks), 100,000 ShareGPT-like
// requests at 8 req/s.
// Run: go test ./internal/runner -run '^$' -bench SimulateMoE100k -benchtime 1x
func BenchmarkSimulateMoE100k(b *testing.B) {
	benchRuns(b, 100_000, func() *assemble.Built { return exampleScenario(b, "moe-dp2ep2", nil) })
}

// BenchmarkSimulateSpec100k is BenchmarkSimulate100k with speculative
// decoding (EAGLE, k = 3, per-position acceptance 0.75, 0.55, 0.40 as in
// examples/spec-eagle.yaml), for comparison with it (see
// docs/speculative.md).
// Run: go test ./internal/runner -run '^$' -bench 'Simulate(Spec)?100k$' -benchtime 1x
func BenchmarkSimulateSpec100k(b *testing.B) {
	const n = 100_000
	var reqs int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		built := shareGPTScenario(b, n, func(s *config.Scenario) {
			s.Engine.Speculative = &config.Speculative{Method: "eagle", NumSpeculativeTokens: 3, AcceptancePerPosition: []float64{0.75, 0.55, 0.40}}
		})
		b.StartTimer()
		reqs += runAll(b, built)
	}
	if reqs != int64(n)*int64(b.N) {
		b.Fatalf("%d requests, want %d a run", reqs, n)
	}
	reportRate(b, reqs, false)
}

// BenchmarkSimulateChatTiers runs the multi-turn chat of
// examples/chat-tiers.yaml (token ids, so prefixes are found and stored)
// scaled to 4,000 conversations (about 18,000 requests), with the host
// tier and GPU only, and reports simulated requests per wall-second. Run:
// go test ./internal/runner -run '^$' -bench ChatTiers -benchtime 3x
func BenchmarkSimulateChatTiers(b *testing.B) {
	for _, tiers := range []bool{false, true} {
		name := "gpu-only"
		if tiers {
			name = "host-tier"
		}
		b.Run(name, func(b *testing.B) {
			var reqs int64
			for i := 0; i < b.N; i++ {
				reqs += runAll(b, exampleScenario(b, "chat-tiers", func(s *config.Scenario) {
					s.Workload.Chat.Conversations = 4000
					if !tiers {
						s.KVTiers = nil
					}
				}))
			}
			reportRate(b, reqs, false)
		})
	}
}

// BenchmarkStartup loads and builds examples/bench-100k.yaml, the work a
// run does before its first event (start-up). Run: go test
// ./internal/runner -run '^$' -bench Startup -benchtime 20x
func BenchmarkStartup(b *testing.B) {
	for i := 0; i < b.N; i++ {
		exampleScenario(b, "bench-100k", nil)
	}
}

// steadyObserver measures how long an instance's batch keeps its
// composition: a step continues the current run when it has the previous
// step's decode count and no prefill tokens, the previous step emitted no
// first token and finished nothing, and (for blockRuns) the instance's
// pool holds as many blocks as at the previous step's end.
type steadyObserver struct {
	sim                  *cluster.Sim
	steps                int64
	runs, blockRuns      int64 // runs started, without and with the block condition
	prevDecode, prevUsed []int
	prevDone             []bool
	// shapes holds the batches seen (cleared at 1<<16 entries), hits
	// the steps whose batch was among them: what a bounded step-time
	// memo keyed by the batch's shape would hit.
	shapes map[perf.Batch]struct{}
	hits   int64
}

func (o *steadyObserver) Advance(int64)            {}
func (o *steadyObserver) Terminal(*metrics.Record) {}
func (o *steadyObserver) StepDone(inst int, r *engine.StepResult) {
	used := o.sim.Engines()[inst].Pool().Used()
	same := o.steps > 0 && r.Batch.PrefillTokens == 0 && r.Batch.NumDecode == o.prevDecode[inst] && !o.prevDone[inst]
	if !same {
		o.runs++
	}
	if !same || used != o.prevUsed[inst] {
		o.blockRuns++
	}
	if _, ok := o.shapes[*r.Batch]; ok {
		o.hits++
	} else {
		if len(o.shapes) == 1<<16 {
			clear(o.shapes)
		}
		o.shapes[*r.Batch] = struct{}{}
	}
	o.steps++
	o.prevDecode[inst], o.prevUsed[inst] = r.Batch.NumDecode, used
	o.prevDone[inst] = len(r.Finished) > 0 || len(r.First) > 0
}

// BenchmarkSteadyRuns reports how many engine steps an unchanged batch
// lasts on bench-100k (20,000 requests) and on 20,000 requests of the
// 32-instance example: steps/run counts runs that end at an arrival, a
// first token or a finished request; steps/blockrun also ends them when a
// block is allocated or released; shape-hits is the fraction of steps
// whose batch (perf.Batch, as the predictor sees it) repeats one of the
// last 65,536 distinct batches. These bound what advancing several
// steps as one event could save (docs/performance.md).
// Run: go test ./internal/runner -run '^$' -bench SteadyRuns -benchtime 1x
func BenchmarkSteadyRuns(b *testing.B) {
	const n = 20_000
	for _, name := range []string{"bench-100k", "bench-1m-32mixed"} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				built := exampleScenario(b, name, func(s *config.Scenario) { s.Workload.Synthetic.Requests = n })
				o := &steadyObserver{shapes: map[perf.Batch]struct{}{}}
				sim, closer, err := built.NewSim(o)
				if err != nil {
					b.Fatal(err)
				}
				k := len(sim.Engines())
				o.sim, o.prevDecode, o.prevUsed, o.prevDone = sim, make([]int, k), make([]int, k), make([]bool, k)
				if _, err := sim.Run(); err != nil {
					b.Fatal(err)
				}
				closer.Close()
				b.ReportMetric(float64(o.steps)/n, "steps/req")
				b.ReportMetric(float64(o.steps)/float64(o.runs), "steps/run")
				b.ReportMetric(float64(o.steps)/float64(o.blockRuns), "steps/blockrun")
				b.ReportMetric(float64(o.hits)/float64(o.steps), "shape-hits")
			}
		})
	}
}
