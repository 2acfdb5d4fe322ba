package metrics

import (
	"fmt"
	"strings"
)

// FaultResult summarises what injected faults and the autoscaler did over
// a run (docs/faults.md); nil in a run without either.
type FaultResult struct {
	Losses   int64 `json:"losses"`
	Restarts int64 `json:"restarts"`
	// Retried requests were sent again to a live instance after theirs
	// was lost; Replaced handoffs moved to another decode instance keeping
	// their KV; KVLost prompts were recomputed because their pinned KV
	// was lost with its prefill instance.
	Retried  int64 `json:"retried"`
	Replaced int64 `json:"replaced"`
	KVLost   int64 `json:"kv_lost"`
	// LoadFailures KV transfers failed to load; LoadRecomputed of them
	// were computed again on the decode instance.
	LoadFailures   int64 `json:"load_failures"`
	LoadRecomputed int64 `json:"load_recomputed"`
	// ScaleUps and ScaleDowns count the autoscaler's decisions.
	ScaleUps   int64 `json:"scale_ups,omitempty"`
	ScaleDowns int64 `json:"scale_downs,omitempty"`
	// Injected is whether the scenario injects faults (a run with only
	// an autoscaler has no fault line to print).
	Injected bool `json:"-"`
	// GPUHours is the GPU time the instances held (serving, starting,
	// restarting or draining) over the run.
	GPUHours float64 `json:"gpu_hours"`
	// Events lists every loss, restart, window and scaling event.
	Events []FaultEventResult `json:"events"`
}

// FaultEventResult is one event of a FaultResult.
type FaultEventResult struct {
	AtS      float64 `json:"t_s"`
	Instance string  `json:"instance"`
	Pool     string  `json:"pool"`
	Kind     string  `json:"kind"`
}

// maxEventLines bounds the events the table prints (the JSON has all).
const maxEventLines = 12

// faultTable writes the faults section of the summary table.
func faultTable(b *strings.Builder, f *FaultResult) {
	b.WriteString(strings.Repeat("-", tableWidth) + "\n")
	if f.Injected || f.Losses+f.Restarts+f.Retried+f.Replaced+f.KVLost+f.LoadFailures > 0 {
		fmt.Fprintf(b, "Faults: %d losses, %d restarts; %d requests retried, %d handoffs re-placed, %d re-prefilled (KV lost); %d KV loads failed (%d recomputed)\n",
			f.Losses, f.Restarts, f.Retried, f.Replaced, f.KVLost, f.LoadFailures, f.LoadRecomputed)
	}
	if f.ScaleUps > 0 || f.ScaleDowns > 0 {
		fmt.Fprintf(b, "Autoscaler: %d scale-ups, %d scale-downs\n", f.ScaleUps, f.ScaleDowns)
	}
	fmt.Fprintf(b, "GPU-hours:                                    %9.3f\n", f.GPUHours)
	for i, e := range f.Events {
		if i == maxEventLines {
			fmt.Fprintf(b, "  ... %d more events (summary JSON: faults.events)\n", len(f.Events)-i)
			break
		}
		fmt.Fprintf(b, "  t=%10.3f s  %-14s %s\n", e.AtS, e.Instance, e.Kind)
	}
}
