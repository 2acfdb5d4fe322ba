package validate

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

type dumpObs struct{ w io.Writer }

func (d *dumpObs) Advance(int64) {}
func (d *dumpObs) StepDone(inst int, r *engine.StepResult) {
	b := r.Batch
	fmt.Fprintf(d.w, "%d,%d,%d,%d,%d,%d,%d,%d\n", r.End-r.Start, b.PrefillTokens, b.PrefillKV, b.PrefillSeqs, b.NumDecode, b.DecodeKVSum, b.DecodeKVMax, b.DecodeKVMin)
}
func (d *dumpObs) Terminal(*metrics.Record) {}

func TestScratchDumpSteps(t *testing.T) {
	pred := os.Getenv("SCRATCH_PRED")
	o := Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "x", Predictor: pred}
	s, reqs, m, err := Scenario(o)
	if err != nil {
		t.Fatal(err)
	}
	wf, wname, err := findWorkload(o, m)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := workload.TokenIDsByID(workload.NewTraceReader(wf, wname))
	wf.Close()
	src, err := workload.MeasuredSource(reqs, ids)
	if err != nil {
		t.Fatal(err)
	}
	s.Workload.Trace = wname
	built, err := config.Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	built.Open = func() (workload.Source, io.Closer, error) { return src, io.NopCloser(nil), nil }
	f, _ := os.Create("/tmp/steps_" + pred + ".csv")
	defer f.Close()
	sim, c, err := built.NewSim(&dumpObs{f})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
}
