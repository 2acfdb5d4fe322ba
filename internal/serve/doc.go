// Package serve runs a built scenario in real time behind an
// OpenAI-compatible HTTP API shaped as vLLM serves it (servesim serve,
// docs/serve.md).
//
// The simulation core stays single-threaded and deterministic: one
// goroutine, the Driver's, owns the cluster simulation. It advances
// simulated time to the wall clock times the speed factor
// (cluster.Sim.RunUntil), turns the requests HTTP handlers hand it over a
// channel into arrivals of a workload.Live source, and client disconnects
// into aborts (cluster.Sim.AbortAt), each stamped with the simulated time
// of its wall-clock moment. After each engine step it reads the running
// requests' output counts (engine.Engine.EachRunning) and publishes them
// to each request's Stream, which its handler writes out as SSE chunks.
// Handlers never touch the simulation.
//
// Given the same arrivals and aborts, the simulation is the one `servesim
// run` computes from a trace holding them: Recorder writes that trace
// (--record), so a served session can be replayed exactly.
//
// Files: driver.go the Driver and Stream; openai.go request parsing,
// prompt counting and response shapes; handlers.go the HTTP endpoints;
// prom.go the Prometheus metrics under vLLM's names; record.go the
// arrival recorder.
package serve
