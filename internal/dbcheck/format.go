package dbcheck

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText prints reports as fixed-width tables, one per report; detail
// adds each op's buckets under it.
func WriteText(w io.Writer, reps []*Report, detail bool) error {
	var b strings.Builder
	for i, r := range reps {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s (tp %d) vs %s, vllm %s tables\n", r.Bundle, r.TP, r.System, r.Version)
		kernels := "-"
		if len(r.AttentionKernels) > 0 {
			kernels = strings.Join(r.AttentionKernels, ", ")
		}
		g := r.GEMMRange
		fmt.Fprintf(&b, "bf16 GEMM rows: m %d-%d, n %d-%d, k %d-%d; attention rows: %d heads, %d KV heads, head size %d per rank, bf16 KV, measured with %s\n",
			g.M[0], g.M[1], g.N[0], g.N[1], g.K[0], g.K[1], r.Heads, r.KVHeads, r.HeadDim, kernels)
		fmt.Fprintf(&b, "%-24s %6s %8s %9s %9s %9s %10s %9s\n", "op", "rows", "outside", "p10 %", "median %", "p90 %", "|median| %", "|p90| %")
		for _, s := range r.Ops {
			writeStats(&b, s, "")
			if detail {
				for _, bk := range s.Buckets {
					writeStats(&b, bk, "  ")
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeStats(b *strings.Builder, s OpStats, indent string) {
	fmt.Fprintf(b, "%-24s %6d %8d", indent+s.Op, s.Compared, s.Outside)
	if s.Signed == nil {
		fmt.Fprintf(b, " %9s %9s %9s %10s %9s\n", "-", "-", "-", "-", "-")
		return
	}
	fmt.Fprintf(b, " %+9.1f %+9.1f %+9.1f %10.1f %9.1f\n", s.Signed.P10, s.Signed.Median, s.Signed.P90, s.Abs.Median, s.Abs.P90)
}

// WriteRowsCSV writes every compared (or outside) row of the reports.
func WriteRowsCSV(w io.Writer, reps []*Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"bundle", "tp", "op", "bucket", "m", "n", "k", "activated_experts",
		"prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "profile_us", "db_us", "diff_pct"}); err != nil {
		return err
	}
	itoa := strconv.Itoa
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, r := range reps {
		for _, row := range r.Rows {
			db, diff := "", ""
			if !row.Outside {
				db, diff = f(row.DBNs/1e3), f(100*row.Diff())
			}
			if err := cw.Write([]string{r.Bundle, itoa(r.TP), row.Op, row.Bucket, itoa(row.M), itoa(row.N), itoa(row.K), itoa(row.Experts),
				itoa(row.PC), itoa(row.KP), itoa(row.ND), itoa(row.KVD), f(row.ProfileNs / 1e3), db, diff}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
