// Package cluster runs a set of serving instances against a workload: it
// owns the event queue, pulls arrivals from the workload source one at a
// time, routes each request to an instance, drives every instance's engine
// step by step, chains the sub-requests of agentic sessions, and hands every
// request's terminal record to an Observer exactly once.
//
// The simulation is single-threaded and deterministic: the same scenario and
// seed give the same sequence of events. Memory stays flat in the number of
// requests: only the next arrival and the requests in the system are held.
//
// Limits (SetLimits) bound a run by simulated time and by events; by
// default an automatic event budget proportional to the tokens seen stops a
// run that loops without progress. At a limit, requests in flight end
// failed (reason "limit") and those that never arrived end truncated, so
// every request still has one outcome. SetInterrupt installs a caller's
// cancellation check polled every 1,024 events; the core reads no clock.
package cluster
