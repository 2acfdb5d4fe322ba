package metrics

import (
	"fmt"
	"slices"
	"strings"
)

const tableWidth = 95

// String renders the result as a fixed-width, deterministic text table in
// the spirit of vLLM's benchmark_serving output: run counters first, then
// one row per latency metric (ms), then rejection and failure reasons in
// key order. Metrics without samples print "-".
func (r Result) String() string {
	var b strings.Builder
	title := " servesim summary "
	pad := (tableWidth - len(title)) / 2
	b.WriteString(strings.Repeat("=", pad) + title + strings.Repeat("=", tableWidth-pad-len(title)) + "\n")
	for _, l := range r.Simulated {
		b.WriteString(l + "\n")
	}
	if len(r.Simulated) > 0 {
		b.WriteString(strings.Repeat("-", tableWidth) + "\n")
	}

	kv := func(label, value string) { fmt.Fprintf(&b, "%-40s %16s\n", label, value) }
	i := func(v int64) string { return fmt.Sprintf("%d", v) }
	f := func(v float64, prec int) string { return fmt.Sprintf("%.*f", prec, v) }
	kv("Requests total:", i(r.RequestsTotal))
	kv("  finished:", i(r.Finished))
	kv("  rejected:", i(r.Rejected))
	kv("  failed:", i(r.Failed))
	if r.Truncated > 0 || r.Limit != "" {
		kv("  truncated (never arrived):", i(r.Truncated))
	}
	if r.WarmupRequests > 0 {
		kv("Warm-up requests (not counted):", i(r.WarmupRequests))
		kv("Simulated time after warm-up (s):", f(r.SimTimeS, 3))
	} else {
		kv("Simulated time (s):", f(r.SimTimeS, 3))
	}
	kv("Request throughput (req/s, whole run):", f(r.ThroughputRPS, 3))
	kv("Input tokens:", i(r.InputTokens))
	kv("  from prefix cache:", i(r.CachedTokens))
	kv("Output tokens:", i(r.OutputTokens))
	kv("Input throughput (tok/s, whole run):", f(r.InputTokS, 2))
	kv("Output throughput (tok/s, whole run):", f(r.OutputTokS, 2))
	if st := r.Steady; st != nil {
		kv(fmt.Sprintf("Steady state, all %d clients busy (s):", st.Clients), fmt.Sprintf("%.3f-%.3f", st.StartS, st.EndS))
		kv("  request throughput (req/s):", f(st.ThroughputRPS, 3))
		kv("  output throughput (tok/s):", f(st.OutputTokS, 2))
	}
	kv("Preemptions:", i(r.Preemptions))
	kv("Re-prefills:", i(r.Reprefills))
	kv("Handoff retries:", i(r.Retries))
	if sp := r.Speculative; sp != nil {
		kv("Speculative acceptance rate (%):", f(sp.AcceptanceRate*100, 2))
		kv("  mean accepted length:", f(sp.MeanAcceptedLength, 3))
		kv("  tokens per step (per sequence):", f(sp.TokensPerStep, 3))
		kv("  draft share of step time (%):", f(sp.DraftShare*100, 2))
	}
	if r.SLO != nil {
		if r.SLO.Attainment != nil {
			kv("SLO TTFT / TPOT / E2E (ms):", sloBound(r.SLO.TTFTMs)+" / "+sloBound(r.SLO.TPOTMs)+" / "+sloBound(r.SLO.E2EMs))
			kv("SLO met:", i(*r.SLO.Met))
			kv("SLO attainment (%):", f(*r.SLO.Attainment*100, 2))
			kv("Goodput (req/s, met / duration):", f(*r.SLO.GoodputRPS, 3))
		} else {
			kv("SLO attainment, goodput:", "n/a")
			b.WriteString("  (no per-request bounds: set slo.ttft_ms, tpot_ms or e2e_ms)\n")
		}
		for _, t := range r.SLO.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "MISSED"
			}
			if t.ValueMs == nil {
				verdict = "MISSED (no samples)"
			}
			if t.Straddles() {
				// The histogram's bucket spans the bound: say what decided.
				verdict += fmt.Sprintf(" (%d of %d within; the value is the histogram's, within 0.05 %%)", t.Within, t.Count)
			}
			kv(fmt.Sprintf("Target p%d %s <= %g ms:", t.Percentile, strings.ToUpper(string(t.Metric)), t.MaxMs), t.ValueString(3)+" "+verdict)
		}
	}

	b.WriteString(strings.Repeat("-", tableWidth) + "\n")
	side := r.LatencySide
	if side == "" {
		side = "engine"
	}
	fmt.Fprintf(&b, "%-20s %8s", "Latency (ms)", "count")
	for _, h := range []string{"mean", "p50", "p90", "p95", "p99", "max"} {
		fmt.Fprintf(&b, " %10s", h)
	}
	b.WriteString("\n")
	rows := []struct {
		name string
		s    Stat
	}{
		{"TTFT (" + side + ")", r.TTFT}, {"TPOT (" + side + ")", r.TPOT}, {"ITL (" + side + ")", r.ITL}, {"E2E (" + side + ")", r.E2E},
	}
	if r.EngineTTFT != nil && r.EngineTPOT != nil {
		rows = append(rows, []struct {
			name string
			s    Stat
		}{{"TTFT (engine)", *r.EngineTTFT}, {"TPOT (engine)", *r.EngineTPOT}}...)
	}
	rows = append(rows, []struct {
		name string
		s    Stat
	}{
		{"Queue delay", r.QueueDelay}, {"Handoff wait", r.HandoffWait},
		{"Decode capacity wait", r.CapacityWait}, {"KV transfer", r.Transfer},
	}...)
	for _, row := range rows {
		fmt.Fprintf(&b, "%-20s %8d", row.name, row.s.Count)
		for _, v := range []float64{row.s.Mean, row.s.P50, row.s.P90, row.s.P95, row.s.P99, row.s.Max} {
			b.WriteString(" ")
			b.WriteString(cell(v, row.s.Count))
		}
		b.WriteString("\n")
	}
	writePriorities(&b, r.Priorities)
	reasons(&b, "Rejection reasons", r.RejectionReasons, r.RejectionExamples)
	reasons(&b, "Failure reasons", r.FailureReasons, r.FailureExamples)
	if len(r.PinnedKV) > 0 {
		b.WriteString(strings.Repeat("-", tableWidth) + "\n")
		b.WriteString("Pinned KV on prefill instances (blocks)\n")
		for _, p := range r.PinnedKV {
			fmt.Fprintf(&b, "  instance %-4d peak %10d   mean %12.1f\n", p.Instance, p.PeakBlocks, p.MeanBlocks)
		}
		if r.OffloadPeakBytes > 0 {
			fmt.Fprintf(&b, "  offloaded to host memory: peak %.2f GB on one node\n", float64(r.OffloadPeakBytes)/1e9)
		}
		if r.OffloadDeferred > 0 {
			fmt.Fprintf(&b, "  offloads that waited for room in host memory: %d\n", r.OffloadDeferred)
		}
	}
	if r.Faults != nil {
		faultTable(&b, r.Faults)
	}
	if len(r.KVTiers) > 0 {
		b.WriteString(strings.Repeat("-", tableWidth) + "\n")
		b.WriteString("KV tiers    requests  load mean ms   hit tokens    GB read  GB written  chunks held/capacity  evicted  dropped\n")
		for _, t := range r.KVTiers {
			fmt.Fprintf(&b, "  %-8s %9d %13.3f %12d %10.2f %11.2f %11d/%-9d %8d %8d\n", t.Tier, t.Requests, t.LoadMeanMs, t.HitTokens,
				float64(t.BytesRead)/1e9, float64(t.BytesWritten)/1e9, t.ChunksHeld, t.ChunksCapacity, t.ChunksEvicted, t.ChunksDropped)
		}
	}
	if w := r.Swap; w != nil {
		b.WriteString(strings.Repeat("-", tableWidth) + "\n")
		fmt.Fprintf(&b, "Swap preemption (legacy, vLLM v0): %d out, %d in, %d recomputed (swap space full); %.2f GB out, %.2f GB in; mean copy %.3f ms out, %.3f ms in; peak %d of %d blocks\n",
			w.SwapOuts, w.SwapIns, w.Fallbacks, float64(w.BytesOut)/1e9, float64(w.BytesIn)/1e9, w.OutMeanMs, w.InMeanMs, w.PeakBlocks, w.CapacityBlocks)
	}
	if len(r.KernelTables) > 0 {
		b.WriteString(strings.Repeat("-", tableWidth) + "\n")
		fmt.Fprintf(&b, "%-40s %18s %18s %14s\n", "Kernel tables (perfdb)", "evaluations", "roofline fallbacks", "fallback %")
		for _, t := range r.KernelTables {
			fmt.Fprintf(&b, "  %-38s %18d %18d %14.2f\n", t.Op, t.Evals, t.Fallbacks, 100*float64(t.Fallbacks)/float64(max(t.Evals, 1)))
		}
	}
	if r.Limit != "" {
		b.WriteString(strings.Repeat("-", tableWidth) + "\n")
		b.WriteString("LIMIT: " + r.Limit + "\n")
	}
	if r.Stopped != "" {
		b.WriteString(strings.Repeat("-", tableWidth) + "\n")
		b.WriteString("STOPPED: " + r.Stopped + "\n")
	}
	b.WriteString(strings.Repeat("=", tableWidth) + "\n")
	return b.String()
}

// cell formats one latency value into a 10-wide right-aligned cell, using
// fewer decimals as the value grows so that it always fits.
func cell(v float64, n int64) string {
	if n == 0 {
		return fmt.Sprintf("%10s", "-")
	}
	for prec := 3; prec > 0; prec-- {
		if s := fmt.Sprintf("%10.*f", prec, v); len(s) <= 10 {
			return s
		}
	}
	return fmt.Sprintf("%10.0f", v)
}

func sloBound(ms float64) string {
	if ms <= 0 {
		return "-"
	}
	return fmt.Sprintf("%g", ms)
}

func reasons(b *strings.Builder, title string, m map[string]int64, examples map[string]string) {
	if len(m) == 0 {
		return
	}
	b.WriteString(strings.Repeat("-", tableWidth) + "\n")
	fmt.Fprintf(b, "%-78s %16s\n", title, "count")
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "  %-76s %16d\n", k, m[k])
		if ex, ok := examples[k]; ok {
			fmt.Fprintf(b, "    e.g. %s\n", ex)
		}
	}
}
