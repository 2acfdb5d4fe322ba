package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/servesim/servesim/internal/workload"
)

// copyTiers is a Tiers with no prefix tier whose swap copies take a fixed
// time per block: the swap scenarios drive the engine and deliver each
// copy's end themselves.
type copyTiers struct {
	perBlock int64
	pending  []pendingCopy
}

type pendingCopy struct {
	slot   int32
	out    bool
	blocks int
	end    int64
}

func (c *copyTiers) Lookup(_ int, _ []uint64, from, _ int) (int, int) { return from, 0 }
func (c *copyTiers) Load(int, int32, []uint64, int, int, int, int64) error {
	return fmt.Errorf("no prefix tier")
}
func (c *copyTiers) Store(int, []uint64, int, int, int, int64) error { return nil }
func (c *copyTiers) Weight(int, int) float64                         { return 0 }
func (c *copyTiers) Swap(_ int, slot int32, blocks int, out bool, now int64) error {
	c.pending = append(c.pending, pendingCopy{slot: slot, out: out, blocks: blocks, end: now + int64(blocks)*c.perBlock})
	return nil
}

// TestSwapScheduler runs the scenario files in testdata/swap: step-by-step
// traces of swap preemption, regenerated with -rewrite.
//
//	engine seqs=N budget=N blocks=N swap=N copy=NS  swap space in blocks, copy time per block
//	add id=N in=N out=N                            queue a request
//	run                                            step until idle, copies delivered as they end
func TestSwapScheduler(t *testing.T) {
	datadriven.Walk(t, "testdata/swap", func(t *testing.T, path string) {
		var e *Engine
		var ct *copyTiers
		now := int64(0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "engine":
				cfg := Config{BlockSize: 16, ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true}
				var perBlock int
				d.ScanArgs(t, "seqs", &cfg.MaxNumSeqs)
				d.ScanArgs(t, "budget", &cfg.MaxNumBatchedTokens)
				d.ScanArgs(t, "blocks", &cfg.NumBlocks)
				d.ScanArgs(t, "swap", &cfg.SwapBlocks)
				d.ScanArgs(t, "copy", &perBlock)
				var err error
				if e, err = New(0, cfg, fixedStep{base: 1000, perTok: 1}); err != nil {
					return err.Error()
				}
				ct = &copyTiers{perBlock: int64(perBlock)}
				e.SetTiers(ct)
				now = 0
				return "ok"
			case "add":
				var id, in, out int
				d.ScanArgs(t, "id", &id)
				d.ScanArgs(t, "in", &in)
				d.ScanArgs(t, "out", &out)
				r := workload.Request{ID: int64(id), InputTokens: in, OutputTokens: out}
				e.Add(&r, now)
				return fmt.Sprintf("waiting %d", e.Waiting())
			case "run":
				var b strings.Builder
				for guard := 0; guard < 10000; guard++ {
					// Deliver the copies that have ended, in order.
					for {
						i := -1
						for j, p := range ct.pending {
							if p.end <= now && (i < 0 || p.end < ct.pending[i].end) {
								i = j
							}
						}
						if i < 0 {
							break
						}
						p := ct.pending[i]
						ct.pending = append(ct.pending[:i], ct.pending[i+1:]...)
						if err := e.SwapDone(p.slot, p.out, p.end); err != nil {
							return "error: " + err.Error()
						}
						dir := "in"
						if p.out {
							dir = "out"
						}
						fmt.Fprintf(&b, "t=%d swap-%s of request %d done (%d blocks) | swap space used=%d free=%d\n",
							p.end, dir, e.slots[p.slot].rec.ID, p.blocks, e.SwapUsed(), e.Pool().Free())
					}
					if !e.HasWork() && len(ct.pending) == 0 {
						break
					}
					line := step(e, &now)
					if !strings.HasSuffix(line, "idle\n") {
						b.WriteString(line)
						continue
					}
					if len(ct.pending) == 0 {
						b.WriteString(line)
						break
					}
					next := ct.pending[0].end
					for _, p := range ct.pending {
						next = min(next, p.end)
					}
					fmt.Fprintf(&b, "t=%d idle until t=%d\n", now, next)
					now = max(now, next)
				}
				if err := e.err; err != nil {
					b.WriteString("ERROR " + err.Error() + "\n")
				}
				st := e.SwapTotals()
				fmt.Fprintf(&b, "swap-outs=%d swap-ins=%d fallbacks=%d blocks out=%d in=%d\n", st.Outs, st.Ins, st.Fallbacks, st.BlocksOut, st.BlocksIn)
				return b.String()
			}
			return "unknown command " + d.Cmd
		})
	})
}
