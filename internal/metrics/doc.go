// Package metrics records what happened to requests and instances during a
// simulated run and writes it out.
//
// Vocabulary (vLLM's benchmark conventions, times in integer ns since the
// start of the run, -1 meaning "never happened"):
//
//   - TTFT = first token - arrival; TPOT = (last - first)/(generated - 1)
//     for requests with at least two tokens; E2E = last - arrival for
//     finished requests; queue delay = first scheduled - arrival.
//   - ITL: a gap between consecutive output tokens of one request, reported
//     by the engine through Summary.AddITL; with speculative decoding, the
//     gap before each step's tokens (one streamed chunk, as vLLM's
//     benchmark counts it).
//   - Outcomes: every request ends finished, rejected, failed or truncated
//     (never arrived: a run limit ended the run first), and the four
//     counts add up to requests_total. SLO attainment counts every outcome
//     but finished as a miss.
//   - Handoff wait, decode capacity wait and KV transfer time apply to
//     requests prefilled on one instance and decoded on another
//     (Record.Handoff).
//
// Pieces:
//
//   - Record: the life of one request; NewRecord starts one with every time
//     set to -1.
//   - CSVWriter, JSONLWriter: stream records (Columns order), one row each,
//     without retaining them. Times are milliseconds with exactly three
//     decimals, formatted with integer arithmetic; absent values are empty
//     CSV cells or JSON null. Output bytes depend only on the records.
//   - Summary: streaming accumulator (an HdrHistogram per latency metric in
//     microseconds, 3 significant digits, plus exact count/sum/min/max) whose
//     Finish returns Result, a plain struct with JSON tags and a
//     deterministic fixed-width String. Distributions cover finished
//     requests only. Percentiles are within 0.1 % of exact nearest-rank
//     values and clamped to the exact min/max.
//   - Stats, Percentile: exact statistics of small samples with numpy's
//     default linear interpolation, for validation against measured runs.
//   - SeriesWriter, Interval, Snapshot: a per-instance time series at fixed
//     intervals (1 s by default) in the layout of vLLM's timeseries.csv plus
//     an instance column and P/D columns.
//
// Nothing here reads the wall clock or keeps global state; no type is safe
// for concurrent use.
package metrics
