// Package search answers capacity questions by running a scenario many
// times.
//
// MaxRate finds the largest arrival rate at which SLO attainment (the share
// of requests that finish within the TTFT, TPOT and E2E bounds) reaches a
// target, by bisection on a multiplier of the scenario's arrival rate, and
// checks that a little more load (5 % by default) misses the target.
// PDRatio, for a fixed number of GPUs, runs MaxRate for every split of the
// GPUs between prefill and decode instances and picks the split with the
// most goodput per GPU.
//
// Scenarios are changed with sweep.Apply, so every variant is validated as
// a scenario file is; every simulation is deterministic, and so are the
// answers.
package search
