package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"slices"
	"strconv"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// TestTierColumns: a sweep with a kv_tiers axis writes the tier, swap and
// offload columns after the metric columns; the GPU-only point leaves the
// host columns empty and the host-tier point carries its run's figures
// (the Result the row was written from). A sweep without tiers keeps the
// columns it had.
func TestTierColumns(t *testing.T) {
	base, err := config.Parse([]byte(`
model: meta-llama/Llama-3.1-8B
engine: {num_gpu_blocks: 600}
workload:
  chat:
    conversations: 30
    arrival: {kind: poisson, rate: 2}
    turns: {kind: uniform, min: 2, max: 4}
    think_ms: {kind: fixed, mean: 2000}
    system_prompts: 2
    system_prompt: {kind: fixed, mean: 600}
    message: {kind: fixed, mean: 200}
    output: {kind: fixed, mean: 100}
`), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGrid([]byte("kv_tiers: [null, {}]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, config.Source{}, g)
	if err != nil {
		t.Fatal(err)
	}
	if x := p.Extras(); !x.Tiers || x.Spec {
		t.Fatalf("extras %+v: want tiers only", x)
	}
	var rows []Row
	var buf bytes.Buffer
	w := NewCSVWriter(&buf, p)
	if err := p.Run(t.Context(), Options{Workers: 1}, func(r Row) error {
		if r.Err != "" {
			t.Fatalf("point %d: %s", r.Point, r.Err)
		}
		rows = append(rows, r)
		return w.Write(r)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	i := slices.Index(head, TierColumns()[0])
	if i != len(head)-1-len(TierColumns()) || !slices.Equal(head[i:len(head)-1], TierColumns()) {
		t.Fatalf("header %v: want the tier columns just before error", head)
	}
	col := func(rec []string, name string) string { return rec[slices.Index(head, name)] }
	if len(rows[0].Result.KVTiers) != 0 || len(rows[1].Result.KVTiers) != 1 {
		t.Fatalf("tiers per point: %d, %d; want 0, 1", len(rows[0].Result.KVTiers), len(rows[1].Result.KVTiers))
	}
	for _, name := range []string{"kv_host_requests", "kv_host_bytes_written", "kv_disk_requests", "swap_outs"} {
		if v := col(recs[1], name); v != "" {
			t.Errorf("GPU-only point: %s = %q, want empty", name, v)
		}
	}
	host := rows[1].Result.KVTiers[0]
	if host.Requests == 0 || host.BytesWritten == 0 {
		t.Fatalf("the host tier was not used: %+v", host)
	}
	for name, want := range map[string]int64{
		"kv_host_requests": host.Requests, "kv_host_hit_tokens": host.HitTokens, "kv_host_loads": host.Loads,
		"kv_host_bytes_read": host.BytesRead, "kv_host_bytes_written": host.BytesWritten,
		"kv_host_chunks_held": host.ChunksHeld, "kv_host_chunks_capacity": host.ChunksCapacity,
	} {
		if got := col(recs[2], name); got != strconv.FormatInt(want, 10) {
			t.Errorf("host-tier point: %s = %q, want %d", name, got, want)
		}
	}
	if got := col(recs[2], "kv_disk_requests"); got != "" {
		t.Errorf("no disk tier: kv_disk_requests = %q, want empty", got)
	}

	// Without kv_tiers anywhere, the header is the one before.
	g2, err := ParseGrid([]byte("seed: [1, 2]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := NewPlan(context.Background(), base, config.Source{}, g2)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Extras().Tiers || slices.Contains(Columns(g2, p2.Extras()), "kv_host_requests") {
		t.Error("a sweep without kv_tiers has tier columns")
	}
}
