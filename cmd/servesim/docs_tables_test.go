package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/tableview"
)

// validateDiffs runs validate on an embedded measured run and returns its
// differences in % by "METRIC stat" (TTFT mean, ...) and their largest
// magnitude.
func validateDiffs(t *testing.T, run, predictor string) (map[string]float64, float64) {
	t.Helper()
	d, m, _ := validateRun(t, run, predictor)
	return d, m
}

// validateRun is validateDiffs with the simulated queue delays by stat
// (mean, p50, ...), ms.
func validateRun(t *testing.T, run, predictor string) (map[string]float64, float64, map[string]float64) {
	t.Helper()
	var out, stderr bytes.Buffer
	if code := execute([]string{"validate", "--measured", run, "--predictor", predictor, "--json"}, &out, &stderr); code != 0 {
		t.Fatalf("validate %s --predictor %s: exit %d: %s", run, predictor, code, stderr.String())
	}
	var v struct {
		Stats []struct {
			Metric, Stat string
			Diff         float64 `json:"diff_pct"`
		} `json:"stats"`
		Queue []struct {
			Stat      string
			Simulated float64
		} `json:"queue_delay"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	diff := map[string]float64{}
	maxAbs := 0.0
	for _, s := range v.Stats {
		diff[s.Metric+" "+s.Stat] = s.Diff
		maxAbs = max(maxAbs, max(s.Diff, -s.Diff))
	}
	queue := map[string]float64{}
	for _, q := range v.Queue {
		queue[q.Stat] = q.Simulated
	}
	return diff, maxAbs, queue
}

// signed renders a difference as the docs write it, with a sign and,
// when minus is true, the typographic minus.
func signed(x float64, minus bool) string {
	s := fmt.Sprintf("%+.2f", x)
	if minus {
		s = strings.Replace(s, "-", "−", 1)
	}
	return s
}

// TestDocsSensitivityTableCurrent: docs/engine-time.md tabulates the
// validation runs with one term changed at a time (§8) and with one step
// kind charged more (§9), most rows by a code edit that no command
// regenerates. Their reference figures, the model as shipped and the
// roofline predictor, must equal what validate prints today: when the
// model moves, this fails and the tables are measured again, so the
// edited rows cannot go stale silently. The same holds for the simulated
// side of its queue-delay (§4) and per-request (§9) tables.
func TestDocsSensitivityTableCurrent(t *testing.T) {
	t.Chdir("../..")
	data, err := os.ReadFile("docs/engine-time.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	_, sec8, ok := strings.Cut(doc, "## 8. Sensitivity of the shipped run")
	if !ok {
		t.Fatal("docs/engine-time.md: no section 8. Sensitivity of the shipped run")
	}
	sec8, _, _ = strings.Cut(sec8, "\n## ")
	firstRow := func(text, prefix string) string {
		for line := range strings.SplitSeq(text, "\n") {
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
		return ""
	}
	llama, llamaMax := validateDiffs(t, "builtin:RTXPRO6000-Llama-3.1-8B", "profile")
	roof, roofMax := validateDiffs(t, "builtin:RTXPRO6000-Llama-3.1-8B", "roofline")
	for _, c := range []struct {
		row    string
		diff   map[string]float64
		maxAbs float64
	}{
		{"| model as shipped |", llama, llamaMax},
		{"| roofline predictor (`--predictor roofline`), for comparison |", roof, roofMax},
	} {
		cells := []string{strings.TrimSuffix(c.row, " |")}
		for _, k := range []string{"TTFT mean", "TTFT p50", "TPOT mean", "TPOT p99", "E2E mean", "E2E p99"} {
			cells = append(cells, signed(c.diff[k], false))
		}
		want := strings.Join(cells, " | ") + fmt.Sprintf(" | %.2f |", c.maxAbs)
		if shown := firstRow(sec8, c.row); shown != want {
			t.Errorf("docs/engine-time.md §8: the row\n%s\nno longer matches validate:\n%s\nmeasure the table's rows again", shown, want)
		}
	}

	// §9's diagnostics: the Llama columns of the shipped row, and the
	// shipped Qwen figures the note under the table gives.
	want := fmt.Sprintf("| model as shipped | %s / %s / %s |", signed(llama["TTFT mean"], true), signed(llama["TTFT p50"], true), signed(llama["TTFT p90"], true))
	if shown := firstRow(doc[strings.Index(doc, "| diagnostic |"):], "| model as shipped |"); !strings.HasPrefix(shown, want) || !strings.HasSuffix(shown, "| "+signed(llama["TPOT mean"], true)+" / +0.57 |") {
		t.Errorf("docs/engine-time.md §9: the diagnostics' shipped row\n%s\nno longer matches validate (Llama: %s ..., TPOT mean %s); measure the rows again", shown, want, signed(llama["TPOT mean"], true))
	}
	qwen, _, qwenQueue := validateRun(t, "builtin:RTXPRO6000-Qwen3-30B-A3B-Instruct-2507", "profile")
	note := fmt.Sprintf("now gives %s / %s / %s / %s / %s and %s.", signed(qwen["TTFT mean"], true), signed(qwen["TTFT p50"], true),
		signed(qwen["TTFT p90"], true), signed(qwen["TTFT p95"], true), signed(qwen["TTFT p99"], true), signed(qwen["TPOT mean"], true))
	if !strings.Contains(strings.Join(strings.Fields(doc), " "), note) {
		t.Errorf("docs/engine-time.md §9: the note under the diagnostics should say the shipped Qwen run %q", note)
	}

	// §4's queue delays: the rows stamped at formation are validate's
	// simulated queue rows.
	_, _, llamaQueue := validateRun(t, "builtin:RTXPRO6000-Llama-3.1-8B", "profile")
	rows := strings.Split(doc[strings.Index(doc, "| run | | mean | p50 |"):], "\n")
	k := 0
	for _, q := range []map[string]float64{llamaQueue, qwenQueue} {
		for k < len(rows) && !strings.HasPrefix(rows[k], "| | servesim, stamped at formation |") {
			k++
		}
		if k == len(rows) {
			t.Fatal("docs/engine-time.md: the queue-delay rows stamped at formation are missing")
		}
		cells := strings.Split(rows[k], "|")
		for i, stat := range []string{"mean", "p50", "p90", "p95", "p99"} {
			shown, err := strconv.ParseFloat(strings.TrimSpace(cells[3+i]), 64)
			if err != nil || math.Abs(shown-q[stat]) > 0.051 {
				t.Errorf("docs/engine-time.md: the queue-delay row\n%s\nshows %s %s ms; validate gives %.2f", rows[k], stat, strings.TrimSpace(cells[3+i]), q[stat])
			}
		}
		k++
	}

	// §9's per-request table: servesim's side (after the arrow) is the
	// TTFT sum and mean TPOT of validate's simulated records by id range.
	csvPath := filepath.Join(t.TempDir(), "r.csv")
	var out, stderr bytes.Buffer
	if code := execute([]string{"validate", "--measured", "builtin:RTXPRO6000-Llama-3.1-8B", "--requests-csv", csvPath}, &out, &stderr); code != 0 {
		t.Fatalf("validate --requests-csv: exit %d: %s", code, stderr.String())
	}
	recs, err := readCSV(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, c := range []struct {
		lo, hi int
		row    string
	}{
		{15, 24, "| 15–24 "}, {1, 59, "| 1–59 "}, {60, 127, "| 60–127 "}, {128, 299, "| 128–299 "},
	} {
		ttft, tpot, n := 0.0, 0.0, 0
		for _, r := range recs[1:] {
			id, err := strconv.Atoi(r[col["id"]])
			if err != nil || id < c.lo || id > c.hi {
				continue
			}
			a, errA := strconv.ParseFloat(r[col["ttft_ms"]], 64)
			b, errB := strconv.ParseFloat(r[col["tpot_ms"]], 64)
			if errA != nil || errB != nil {
				t.Fatalf("request %d: ttft %q, tpot %q", id, r[col["ttft_ms"]], r[col["tpot_ms"]])
			}
			ttft, tpot, n = ttft+a, tpot+b, n+1
		}
		sum := tableview.Thousands(strconv.FormatFloat(ttft, 'f', 0, 64)) + " ms"
		if ttft >= 1e6 {
			sum = tableview.Thousands(strconv.FormatFloat(ttft/1000, 'f', 1, 64)) + " s"
		}
		want := []string{"→ " + sum, fmt.Sprintf("→ %.2f ms", tpot/float64(n))}
		shown := firstRow(doc, c.row)
		for _, w := range want {
			if !strings.Contains(shown, w) {
				t.Errorf("docs/engine-time.md: the per-request row\n%s\nshould show servesim's %q (validate --requests-csv)", shown, w)
			}
		}
	}
}
