package dbcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
)

// CollectiveRow is one all-reduce message size: the measured times (µs;
// nil where the table has no row at that size) and servesim's modelled
// ones.
type CollectiveRow struct {
	// Bytes is the message size (the tables' element count × 2: bf16 for
	// vLLM's rows, half for NCCL's).
	Bytes int64 `json:"bytes"`
	// VLLMGraphUs and VLLMEagerUs are custom_allreduce_perf: vLLM's
	// all-reduce through its own dispatch (custom kernel, or NCCL above its
	// buffer), captured in a CUDA graph or launched eagerly. NCCLUs is
	// nccl_perf's all_reduce.
	VLLMGraphUs *float64 `json:"vllm_graph_us,omitempty"`
	VLLMEagerUs *float64 `json:"vllm_eager_us,omitempty"`
	NCCLUs      *float64 `json:"nccl_us,omitempty"`
	// ModelUs is perf.AllReduce as a run resolves it on the link (vLLM's
	// choice of custom all-reduce or NCCL); ModelNCCLUs the same with the
	// custom all-reduce disabled (NCCL only).
	ModelUs     float64 `json:"model_us"`
	ModelNCCLUs float64 `json:"model_nccl_us"`
}

// CollectiveTable is the all-reduce of one group size on one system.
type CollectiveTable struct {
	System string `json:"system"`
	GPUs   int    `json:"gpus"`
	// Link is the interconnect the model was resolved on; Custom says
	// whether the model's vLLM dispatch uses the custom all-reduce on it.
	Link   perf.Interconnect `json:"link"`
	Custom bool              `json:"model_custom_allreduce"`
	// Constants are the accelerator's calibrated all-reduce constants the
	// model uses (zero: the link kind's defaults).
	Constants perf.CollectiveEff `json:"constants"`
	Rows      []CollectiveRow    `json:"rows"`
}

// Collectives lists the all-reduce of gpus ranks at every message size the
// database measured (custom all-reduce bf16 rows and NCCL half-precision
// all_reduce rows), beside perf.NewAllReduce on link. It fails when the
// database has no all-reduce row for gpus ranks. The model takes the
// calibrated constants c (perf.AllReduce.With; zero: the defaults), as a
// run on the accelerator does.
func Collectives(db *perfdb.DB, gpus int, link perf.Interconnect, c perf.CollectiveEff) (*CollectiveTable, error) {
	if gpus < 2 {
		return nil, fmt.Errorf("collectives: --gpus must be >= 2, got %d", gpus)
	}
	type meas struct{ graph, eager, nccl *float64 }
	by := map[int64]*meas{}
	at := func(bytes int64) *meas {
		if by[bytes] == nil {
			by[bytes] = &meas{}
		}
		return by[bytes]
	}
	us := func(ms float64) *float64 { v := ms * 1e3; return &v }
	for _, r := range db.CustomAR {
		if r.GPUs != gpus || r.Dtype != "bfloat16" {
			continue
		}
		switch r.Backend {
		case "vllm_graph":
			at(2 * r.Size).graph = us(r.Ms)
		case "vllm_eager":
			at(2 * r.Size).eager = us(r.Ms)
		}
	}
	for _, r := range db.NCCL {
		if r.GPUs == gpus && r.Op == "all_reduce" && r.Dtype == "half" {
			at(2 * r.Size).nccl = us(r.Ms)
		}
	}
	if len(by) == 0 {
		var have []int
		for _, r := range append(slices.Clone(db.CustomAR), db.NCCL...) {
			if r.Op == "all_reduce" && !slices.Contains(have, r.GPUs) {
				have = append(have, r.GPUs)
			}
		}
		slices.Sort(have)
		return nil, fmt.Errorf("collectives: %s has no all-reduce rows for %d GPUs (it has %v)", db.System, gpus, have)
	}
	model := perf.NewAllReduce(gpus, link, false).With(c, link)
	nccl := perf.NewAllReduce(gpus, link, true).With(c, link)
	t := &CollectiveTable{System: db.System, GPUs: gpus, Link: link, Custom: model.Custom, Constants: c}
	for bytes, m := range by {
		t.Rows = append(t.Rows, CollectiveRow{Bytes: bytes, VLLMGraphUs: m.graph, VLLMEagerUs: m.eager, NCCLUs: m.nccl,
			ModelUs: float64(model.Ns(bytes)) / 1e3, ModelNCCLUs: float64(nccl.Ns(bytes)) / 1e3})
	}
	slices.SortFunc(t.Rows, func(a, b CollectiveRow) int { return int(a.Bytes - b.Bytes) })
	return t, nil
}

// WriteText prints the table: times in µs, and the model over the
// measurement it stands for (the vLLM dispatch over the CUDA-graph rows,
// NCCL over NCCL).
func (t *CollectiveTable) WriteText(w io.Writer, accName string) error {
	var b strings.Builder
	how := "NCCL"
	if t.Custom {
		how = "custom all-reduce, NCCL above 8 MiB"
	}
	p2p := "no peer-to-peer"
	if t.Link.P2P || t.Link.NVLink {
		p2p = "peer-to-peer"
	}
	kind := "PCIe"
	if t.Link.NVLink {
		kind = "NVLink"
	}
	fmt.Fprintf(&b, "all-reduce of %d GPUs: %s tables (µs) vs servesim's model on %s's catalog link (%s %.0f GB/s, %s: %s)\n",
		t.GPUs, t.System, accName, kind, t.Link.LinkBW/1e9, p2p, how)
	if c := t.Constants; !c.IsZero() {
		fmt.Fprintf(&b, "model constants from %s's calibration: custom all-reduce latency %.1f µs, NCCL latency %.1f µs, bus bandwidth %.3f of the link\n",
			accName, c.CustomLatencyNs/1e3, c.NCCLLatencyNs/1e3, c.BusEff)
	}
	fmt.Fprintf(&b, "%10s %11s %11s %11s %11s %11s %12s %12s\n", "bytes", "vllm graph", "vllm eager", "nccl", "model", "model nccl", "model/graph", "nccl m/meas")
	cell := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", *v)
	}
	ratio := func(model float64, meas *float64) string {
		if meas == nil || !(*meas > 0) {
			return "-"
		}
		return fmt.Sprintf("%.2f", model / *meas)
	}
	var big *CollectiveRow
	for i, r := range t.Rows {
		fmt.Fprintf(&b, "%10s %11s %11s %11s %11.1f %11.1f %12s %12s\n", sizeLabel(r.Bytes), cell(r.VLLMGraphUs), cell(r.VLLMEagerUs), cell(r.NCCLUs),
			r.ModelUs, r.ModelNCCLUs, ratio(r.ModelUs, r.VLLMGraphUs), ratio(r.ModelNCCLUs, r.NCCLUs))
		if r.VLLMGraphUs != nil && r.NCCLUs != nil {
			big = &t.Rows[i]
		}
	}
	if big != nil {
		// nccl-tests' bus bandwidth of an all-reduce: 2(n-1)/n × bytes / t.
		bus := func(us float64) float64 {
			return 2 * float64(t.GPUs-1) / float64(t.GPUs) * float64(big.Bytes) / (us * 1e3)
		}
		fmt.Fprintf(&b, "bus bandwidth at %s (2(n-1)/n x bytes / time): vllm graph %.1f GB/s, nccl %.1f GB/s, model %.1f GB/s, model nccl %.1f GB/s\n",
			sizeLabel(big.Bytes), bus(*big.VLLMGraphUs), bus(*big.NCCLUs), bus(big.ModelUs), bus(big.ModelNCCLUs))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the table as indented JSON.
func (t *CollectiveTable) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

// sizeLabel writes a byte count in KiB or MiB when it is a whole number of
// them.
func sizeLabel(b int64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}
