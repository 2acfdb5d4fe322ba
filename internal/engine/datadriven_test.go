package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/servesim/servesim/internal/workload"
)

// TestScheduler runs the scenario files in testdata/scheduler: readable
// step-by-step traces of batch formation, regenerated with -rewrite.
//
//	engine seqs=N budget=N blocks=N [bs=16] [lpt=N] [async] [nocache] [role=prefill|decode] [pp=N] [send=NS]
//	       [spec=K accept=a1,...,aK]  speculative decoding, per-position rates
//	       [policy=priority]          vLLM's priority scheduling policy
//	add id=N in=N out=N [at=NS] [prio=P]
//	                                 queue a request (at= a later time: run
//	                                 adds it while the step spanning it runs;
//	                                 prio: its priority, default 0)
//	queues                           the running list in admission order and
//	                                 the waiting queue in serving order, as
//	                                 id(priority)
//	step [n=N]                       form a batch, run it, print what happened
//	run [times]                      step until idle, printing one line per step
//	                                 (times: finished requests' record times)
//	pipe [n=N]                       run batches overlapped as the cluster does
//	                                 (pipeline parallelism), one line per batch
//	                                 start and end, until idle or N lines
func TestScheduler(t *testing.T) {
	datadriven.Walk(t, "testdata/scheduler", func(t *testing.T, path string) {
		var e *Engine
		now := int64(0)
		var later []arrival // requests added with at= in the future, by time
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "engine":
				cfg := Config{BlockSize: 16, ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true}
				for _, a := range d.CmdArgs {
					num := func() int {
						if len(a.Vals) != 1 {
							d.Fatalf(t, "%s wants one integer", a.Key)
						}
						v, err := strconv.Atoi(a.Vals[0])
						if err != nil {
							d.Fatalf(t, "%s: %v", a.Key, err)
						}
						return v
					}
					switch a.Key {
					case "seqs":
						cfg.MaxNumSeqs = num()
					case "budget":
						cfg.MaxNumBatchedTokens = num()
					case "blocks":
						cfg.NumBlocks = num()
					case "bs":
						cfg.BlockSize = num()
					case "lpt":
						cfg.LongPrefillTokenThreshold = num()
					case "async":
						cfg.AsyncScheduling = true
					case "nocache":
						cfg.PrefixCaching = false
					case "pp":
						cfg.PipelineParallel = num()
					case "send":
						cfg.PPSend.LatencyNs = int64(num())
					case "spec":
						cfg.Spec.K = num()
					case "accept":
						var rates []float64
						for _, s := range a.Vals {
							f, err := strconv.ParseFloat(s, 64)
							if err != nil {
								d.Fatalf(t, "accept: %v", err)
							}
							rates = append(rates, f)
						}
						cfg.Spec.Accept = Rates(rates)
					case "policy":
						cfg.PriorityScheduling = a.Vals[0] == "priority"
					case "role":
						switch a.Vals[0] {
						case "prefill":
							cfg.Role = Prefill
						case "decode":
							cfg.Role = Decode
						}
					}
				}
				var err error
				e, err = New(0, cfg, fixedStep{base: 1000, perTok: 1})
				if err != nil {
					return err.Error()
				}
				now = 0
				return "ok"
			case "add":
				var id, in, out int
				var at int64
				d.ScanArgs(t, "id", &id)
				d.ScanArgs(t, "in", &in)
				d.ScanArgs(t, "out", &out)
				if d.HasArg("at") {
					d.ScanArgs(t, "at", &at)
				}
				var prio int
				if d.HasArg("prio") {
					d.ScanArgs(t, "prio", &prio)
				}
				r := workload.Request{ID: int64(id), InputTokens: in, OutputTokens: out, Priority: int32(prio)}
				if why := e.Unfit(&r); why != "" {
					return "unfit: " + why
				}
				if at > now {
					// Arrives later: delivered by run while the step
					// spanning its time is in flight.
					later = append(later, arrival{r: r, at: at})
					return fmt.Sprintf("arrives at %d", at)
				}
				e.Add(&r, now)
				return fmt.Sprintf("waiting %d", e.Waiting())
			case "queues":
				return e.queues()
			case "step":
				n := 1
				if d.HasArg("n") {
					d.ScanArgs(t, "n", &n)
				}
				var b strings.Builder
				for i := 0; i < n; i++ {
					b.WriteString(step(e, &now))
				}
				return b.String()
			case "pipe":
				n := 0
				if d.HasArg("n") {
					d.ScanArgs(t, "n", &n)
				}
				var b strings.Builder
				var err error
				now, err = pipeDrive(e, now, n, func(ev pipeEvent) error {
					b.WriteString(e.describe(ev))
					return nil
				})
				if err != nil {
					b.WriteString("ERROR " + err.Error() + "\n")
				}
				return b.String()
			case "run":
				// run times: each finished request also shows its queued,
				// scheduled and first-token times.
				times := d.HasArg("times")
				var b strings.Builder
				for guard := 0; (e.HasWork() || len(later) > 0) && guard < 10000; guard++ {
					if !e.HasWork() {
						now = max(now, later[0].at) // idle until the next arrival
					}
					b.WriteString(stepTimes(e, &now, times, &later))
				}
				return b.String()
			}
			return "unknown command " + d.Cmd
		})
	})
}

// arrival is a request that reaches the engine at a later time.
type arrival struct {
	r  workload.Request
	at int64
}

// step runs one engine step and describes it on one line.
func step(e *Engine, now *int64) string { return stepTimes(e, now, false, nil) }

// stepTimes is step; with times, each finished request's record times
// follow its id. Requests in later that arrive by the step's end are added
// at their time: before the batch is formed if due by then, else while it
// is in flight, as the cluster delivers them.
func stepTimes(e *Engine, now *int64, times bool, later *[]arrival) string {
	deliver := func(by int64) {
		for later != nil && len(*later) > 0 && (*later)[0].at <= by {
			a := (*later)[0]
			*later = (*later)[1:]
			e.Add(&a.r, a.at)
		}
	}
	deliver(*now)
	d, ok := begin(e, *now)
	if !ok {
		return fmt.Sprintf("t=%d idle\n", *now)
	}
	deliver(*now + d - 1)
	// The batch just formed: its explicit requests and the decode lane's
	// members (one token each), in admission order.
	f := e.flights[len(e.flights)-1]
	all := append([]scheduled(nil), f.sched...)
	for _, slot := range e.lane {
		all = append(all, scheduled{slot: slot, tokens: 1})
	}
	sort.SliceStable(all, func(i, j int) bool { return e.slots[all[i].slot].order < e.slots[all[j].slot].order })
	var sched []string
	for _, sc := range all {
		s := &e.slots[sc.slot]
		sched = append(sched, fmt.Sprintf("%d:%d", s.rec.ID, sc.tokens))
	}
	b := e.batch
	line := fmt.Sprintf("t=%d batch [%s] prefill=%d decode=%d", *now, strings.Join(sched, " "), b.PrefillTokens, b.NumDecode)
	if b.SpecTokens > 0 {
		line += fmt.Sprintf(" proposals=%d", b.SpecTokens)
	}
	if e.preempted > 0 {
		line += fmt.Sprintf(" preempted=%d", e.preempted)
	}
	*now += d
	r := finish(e, *now)
	if err := e.err; err != nil {
		return line + " ERROR " + err.Error() + "\n"
	}
	var ev []string
	for _, f := range r.Finished {
		if times {
			ev = append(ev, fmt.Sprintf("done %d (arrival=%d queued=%d scheduled=%d first=%d queue_delay=%d)",
				f.ID, f.Arrival, f.Queued, f.Scheduled, f.FirstToken, f.QueueDelay()))
			continue
		}
		ev = append(ev, fmt.Sprintf("done %d", f.ID))
	}
	for _, p := range r.Prefilled {
		ev = append(ev, fmt.Sprintf("prefilled %d (pinned %d blocks)", p.Record.ID, p.Blocks))
	}
	if r.Spec.Drafts > 0 {
		ev = append(ev, fmt.Sprintf("accepted %d of %d, %d tokens", r.Spec.Accepted, r.Spec.Proposed, r.GenTokens))
	}
	if len(ev) > 0 {
		line += " -> " + strings.Join(ev, ", ")
	}
	return fmt.Sprintf("%s | running=%d waiting=%d free=%d\n", line, e.Running(), e.Waiting(), e.Pool().Free())
}

// queues describes the running requests (admission order, decode lane
// included) and the waiting
// queue (serving order) as id(priority) lists.
func (e *Engine) queues() string {
	name := func(slot int32) string {
		s := &e.slots[slot]
		return fmt.Sprintf("%d(%d)", s.rec.ID, s.prio)
	}
	var run, wait []string
	all := append(append([]int32(nil), e.running...), e.lane...)
	sort.SliceStable(all, func(i, j int) bool { return e.slots[all[i]].order < e.slots[all[j]].order })
	for _, slot := range all {
		run = append(run, name(slot))
	}
	q := waitQueue{prio: e.waiting.prio, heap: append([]waitKey(nil), e.waiting.heap...)}
	for i := 0; i < e.waiting.fifo.len(); i++ {
		q.fifo.pushBack(e.waiting.fifo.buf[(int(e.waiting.fifo.head)+i)%len(e.waiting.fifo.buf)])
	}
	for q.len() > 0 {
		wait = append(wait, name(q.popFront()))
	}
	return fmt.Sprintf("running [%s] waiting [%s]\n", strings.Join(run, " "), strings.Join(wait, " "))
}
