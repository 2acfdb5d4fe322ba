// Package cluster runs a set of serving instances against a workload: it
// owns the event queue, pulls arrivals from the workload source one at a
// time, routes each request to an instance, drives every instance's engine
// step by step, chains the sub-requests of agentic sessions, and hands every
// request's terminal record to an Observer exactly once.
//
// The simulation is single-threaded and deterministic: the same scenario and
// seed give the same sequence of events. Memory stays flat in the number of
// requests: only the next arrival and the requests in the system are held.
package cluster
