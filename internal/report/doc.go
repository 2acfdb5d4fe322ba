// Package report renders simulated runs as one self-contained HTML page:
// the summary table, request outcomes, latency CDFs and per-instance time
// series, for one run (`servesim run --report`) or several side by side
// (`servesim compare --report`).
//
// Vocabulary:
//
//   - Collector: what a report needs from a run, fed while the run streams
//     and never holding all requests. Record takes each terminal
//     metrics.Record; TTFT, TPOT and E2E of finished requests go into
//     HdrHistograms (microseconds, 3 significant digits, the geometry of
//     metrics.Summary), from which the CDFs are drawn. Sample takes an
//     instance's metrics.Snapshot at a time; Watch, Advance and Close do the
//     sampling at every 1 s boundary with the contract of
//     metrics.SeriesWriter, so the charts show what the time-series CSV
//     holds.
//   - Downsampling: a series keeps at most MaxPoints points per instance.
//     When one more would exceed it, adjacent points are merged pairwise
//     (sums and maxima), so every point but the last covers the same number
//     of samples, a power of two. Charts plot the mean of each point; the
//     instance table gives exact peaks.
//   - Run: a name, the run's metrics.Result, its Collector and the names of
//     its instances. Write renders a slice of runs.
//
// Contracts: output bytes depend only on Write's arguments (no clock, no
// map order, no randomness). The page has no scripts and loads nothing:
// styles are inline and every chart is an inline <svg> drawn by gonum/plot's
// vgsvg backend, labelled by an aria-label. Memory is bounded by the number
// of instances, not by the number of requests or the simulated time.
package report
