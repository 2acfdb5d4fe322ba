// Package link models KV-cache transfers between serving instances over
// NICs, with max-min fair bandwidth sharing (DESIGN.md section 4, "KV
// transfer").
//
// # Vocabulary
//
//   - Endpoint: one GPU's NIC. It has a bandwidth B in bytes per second,
//     available separately in each direction (egress, for sending, and
//     ingress, for receiving, are independent resources), and a latency L
//     in nanoseconds. B may be +Inf ([Unlimited]): that direction never
//     limits a flow.
//   - Flow: bytes moving from one sender endpoint to one receiver endpoint.
//     A flow uses exactly two resources: the sender's egress and the
//     receiver's ingress. It is the unit of fair sharing.
//   - Transfer: what a caller starts, one or more flows started together
//     under one tag. A tensor-parallel instance moves its KV as tp flows,
//     rank i of the sender to rank i of the receiver ([Network.StartParallel]);
//     a single flow is a transfer of one flow ([Network.Start]). A transfer
//     completes when its last flow completes, and is reported once.
//
// # Semantics
//
// A flow started at time t between endpoints with latencies Lf and Lt is
// in its latency phase during [t, t+max(Lf, Lt)): it consumes no bandwidth
// and moves no bytes. At t+max(Lf, Lt) it becomes active, and from then on
// it moves bytes at its fair-share rate until all its bytes have moved.
// So on otherwise idle NICs of bandwidth B, a flow of S bytes takes
// exactly L + S/B (rounded up to a whole nanosecond). The latency models
// the one-way path delay, paid once, before the data; the latency of a
// path is that of its slower end (max, not sum), so two NICs of latency L
// give a path of latency L.
//
// Rates are max-min fair over the active flows, computed by progressive
// filling (water-filling): all unfrozen flows grow at the same rate until
// some resource is saturated; the flows crossing it are frozen at that
// rate; repeat until every flow is frozen. Every active flow then has a
// bottleneck resource that is saturated and on which no flow is faster
// than it. Rates are recomputed exactly whenever the set of active flows
// changes: when a flow leaves its latency phase and when a flow completes.
// Between those instants rates are constant.
//
// A flow may carry a rate cap (StartParallelCapped): its sender produces
// the data no faster than that. The cap acts as a resource of that flow
// alone: in progressive filling a capped flow is frozen at its cap as soon
// as the common rate reaches it, and the bandwidth it leaves goes to the
// other flows. A capped flow alone on NICs of bandwidth B >= cap takes
// L + S/cap; between unlimited NICs, S/cap.
//
// A flow whose bytes are zero, or whose two resources are both unlimited
// and which has no cap, completes the instant it becomes active; with zero latency it completes
// at its start time (duration 0). A flow from an endpoint to itself is
// allowed and uses that NIC's egress and ingress like any other flow.
//
// # Time and numbers
//
// Time is int64 nanoseconds; the network never reads a clock. Completion
// times are rounded up to whole nanoseconds (with a tolerance of about
// 1e-12 relative, so that floating-point noise on an exact result does not
// add a nanosecond). A flow whose remaining bytes fall within 1e-6 bytes of
// zero, or whose rounded completion time has been reached, is complete, so
// nothing can be left stuck with a tiny residue. Remaining bytes are
// float64; no NaN is ever produced and no completion time is ever earlier
// than the time at which it is computed. Times that would overflow int64
// saturate at math.MaxInt64.
//
// # Driving it
//
// [Network] is a pure, deterministic, single-threaded state machine, in the
// style of etcd's raft: no goroutines, no clock, no randomness. The caller
// (the cluster's event loop)
//
//  1. calls [Network.Start] or [Network.StartParallel] when a transfer
//     begins,
//  2. asks [Network.NextEvent] for the earliest time the network needs to
//     be advanced, and schedules a wake-up then (replacing any previous
//     wake-up: every Start and Advance may move it),
//  3. at the wake-up calls [Network.Advance] to collect the transfers that
//     completed, in order of completion time, then TransferID (within one
//     call; across calls completion times never decrease).
//
// NextEvent includes the instants at which flows leave their latency phase,
// because those change the rates; an Advance at such an instant may return
// no completions. Advancing at any other time (a stale or spurious wake-up)
// is harmless and does not change any result: state is only recomputed at
// the network's own events, so the results depend only on the sequence of
// Start calls and their times.
//
// Calls must not go back in time: Start and Advance return an error
// wrapping ErrInvalid if now is earlier than the latest time already passed
// to either, as every call does on invalid arguments (unknown endpoints,
// negative byte counts, a bandwidth or latency out of range); a refused
// call changes nothing. Nothing in the package panics: an internal
// inconsistency (a bug) is returned as an error too.
package link
