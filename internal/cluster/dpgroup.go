package cluster

import (
	"fmt"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/perf"
)

// DPGroup is one instance served by data-parallel attention ranks that step
// in lockstep, as vLLM 0.19 runs an MoE model with data_parallel_size > 1:
// every MoE layer synchronises the ranks, so a step starts on all of them
// at once, an idle rank runs a dummy batch, outside eager mode every rank
// pads its step to the largest token count of the group (vLLM's
// coordinate_batch_across_dp in vllm/v1/worker/dp_utils.py, called from
// the GPU model runner), and the step lasts as long as the slowest rank.
type DPGroup struct {
	// Ranks are the engine indices of the group's DP ranks, in rank order.
	Ranks []int
	// Pred times one rank's batch (the ranks share one configuration). It
	// must honour perf.Batch.DPPadTo and MoENs.
	Pred perf.Predictor
	// MoE times the group's MoE layers at the gathered token count, with
	// the dispatch and combine collectives; nil for a dense model (then
	// the ranks still step in lockstep only if Lockstep is set).
	MoE interface{ StepNs(gathered int) int64 }
	// Graph is a rank's own CUDA-graph dispatch of a batch (how it would
	// run alone and the token count it pads to): perf.EngineTime.Dispatch.
	Graph func(b *perf.Batch) (perf.Dispatch, int)
	// Balance is true when vLLM's DP load balancer picks the rank of each
	// request; false when the router addresses the ranks directly.
	Balance bool
	// PublishNs is the least time between two publications of the ranks'
	// counts to the balancer (vLLM: 100 ms); HeartbeatNs the time after
	// which unchanged counts are published again (vLLM: 4 s).
	PublishNs, HeartbeatNs int64
	// SeededTies breaks the balancer's ties between ranks of equal score
	// at random, from a stream seeded with TieSeed, instead of to the
	// lowest rank (vLLM's rule).
	SeededTies bool
	TieSeed    uint64
	// Overlap, when set, runs a step as vLLM's dual-batch overlap
	// (enable_dbo): two micro-batches of half the tokens whose compute
	// and all-to-all overlap. A step is split only when every rank's own
	// tokens reach DBODecodeTokens (a decode-only batch) or
	// DBOPrefillTokens (a batch with a prefill): vLLM micro-batches on all
	// ranks or on none.
	Overlap                           Overlap
	DBODecodeTokens, DBOPrefillTokens int
}

// Overlap times a dual-batch-overlapped step (moe.Model implements it).
type Overlap interface {
	// HalfMoENs is the MoE time, all-to-all included, of one
	// micro-batch: half of gathered tokens.
	HalfMoENs(gathered int) int64
	// Overlapped is the step's time as two overlapped micro-batches,
	// given its whole time stepNs and halfNs, the slowest rank's time for
	// one micro-batch alone (its half batch with HalfMoENs).
	Overlapped(stepNs, halfNs int64, gathered int) int64
}

// GroupStep is what one lockstep step of a DP group did, per rank, for
// observation and tests.
type GroupStep struct {
	Start, End int64
	// Tokens are the ranks' own tokens (1 for a dummy batch); Dummy marks
	// ranks that ran a dummy batch; PadTo is the token count every rank
	// padded to (0 when the step ran eagerly); Gathered the tokens the MoE
	// layers ran on; MoENs their time, collectives included.
	Tokens   []int
	Dummy    []bool
	PadTo    int
	Gathered int
	MoENs    int64
	// RankNs is each rank's own predicted time; the step takes the largest.
	RankNs []int64
	// Micro says whether the step ran as two overlapped micro-batches
	// (dual-batch overlap).
	Micro bool
}

// dpGroup is a DPGroup's run state.
type dpGroup struct {
	DPGroup
	formed  []bool
	batches []perf.Batch
	last    GroupStep
	steps   int64
	bal     *dpBalancer
}

// setDPGroups declares the data-parallel groups among the engines
// (Config.DPGroups, validated).
func (s *Sim) setDPGroups(groups []DPGroup) {
	s.groupOf = make([]int32, len(s.engines))
	for i := range s.groupOf {
		s.groupOf[i] = -1
	}
	for gi, g := range groups {
		if g.PublishNs <= 0 {
			g.PublishNs = 100_000_000
		}
		if g.HeartbeatNs <= 0 {
			g.HeartbeatNs = 4_000_000_000
		}
		for _, r := range g.Ranks {
			s.groupOf[r] = int32(gi)
		}
		n := len(g.Ranks)
		s.groups = append(s.groups, &dpGroup{DPGroup: g, formed: make([]bool, n), batches: make([]perf.Batch, n), bal: newDPBalancer(n, g.PublishNs, g.HeartbeatNs, ties(g)),
			last: GroupStep{Tokens: make([]int, n), Dummy: make([]bool, n), RankNs: make([]int64, n)}})
	}
}

// ties is the random stream that breaks group g's balancer ties, nil for
// vLLM's lowest-rank rule.
func ties(g DPGroup) *rand.Rand {
	if !g.SeededTies {
		return nil
	}
	return des.Stream(g.TieSeed, "dp-balance-ties")
}

// LastGroupStep returns the latest step of DP group g and how many steps
// the group has run. The slices are reused by the next step.
func (s *Sim) LastGroupStep(g int) (GroupStep, int64) {
	return s.groups[g].last, s.groups[g].steps
}

// kickGroup starts a lockstep step of group gi at now when no rank has a
// batch in flight and some rank has work: every rank forms its batch, idle
// ranks run a dummy one, and all launch for the slowest rank's time.
func (s *Sim) kickGroup(gi int, now int64) error {
	g := s.groups[gi]
	for _, r := range g.Ranks {
		if s.engines[r].InFlight() > 0 {
			return nil
		}
	}
	// Each rank's batch; an idle rank runs a dummy batch of one token.
	st := &g.last
	st.Start = now
	any, sync, padTo, sum := false, perf.RunFull, 0, 0
	for i, r := range g.Ranks {
		e := s.engines[r]
		var err error
		if g.formed[i], err = e.Form(now); err != nil {
			return err
		}
		if g.formed[i] {
			any = true
			g.batches[i] = e.FormedBatch()
		} else {
			g.batches[i] = perf.Batch{NumDecode: 1}
		}
		b := &g.batches[i]
		st.Tokens[i], st.Dummy[i] = b.Tokens(), !g.formed[i]
		mode, padded := g.Graph(b)
		sync = min(sync, mode)
		padTo = max(padTo, padded)
		sum += b.Tokens()
		if g.Balance {
			g.bal.report(now, i, e.Waiting(), e.Running())
		}
	}
	if !any {
		return nil
	}
	// vLLM's coordinate_batch_across_dp: the ranks agree on the least
	// CUDA-graph mode; under a graph every rank pads to the largest padded
	// count, eagerly none does and the MoE gathers the real tokens.
	st.PadTo, st.Gathered = 0, sum
	if sync != perf.RunEager {
		st.PadTo, st.Gathered = padTo, padTo*len(g.Ranks)
	}
	st.MoENs = 0
	if g.MoE != nil {
		st.MoENs = g.MoE.StepNs(st.Gathered)
	}
	var d int64
	for i := range g.Ranks {
		b := &g.batches[i]
		b.DPPadTo, b.DPSynced, b.DPMode, b.MoENs = st.PadTo, true, sync, st.MoENs
		e := s.engines[g.Ranks[i]]
		ns := g.Pred.StepTime(b)
		if g.formed[i] {
			ns += e.FormedDraftNs() // a proposer's passes (MTP), 0 without
		}
		st.RankNs[i] = e.Slowed(ns)
		d = max(d, st.RankNs[i])
	}
	st.Micro = g.Overlap != nil && g.microBatched()
	if st.Micro {
		d = g.Overlap.Overlapped(d, s.halfStepNs(g, st.Gathered), st.Gathered)
	}
	st.End = now + d
	g.steps++
	for i, r := range g.Ranks {
		if !g.formed[i] {
			continue
		}
		step, err := s.engines[r].Launch(now, d)
		if err != nil {
			return err
		}
		if first := s.engines[r].FirstScheduled(); s.pd != nil && len(first) > 0 {
			if err := s.prefillStarted(first, now); err != nil {
				return err
			}
		}
		if err := s.schedule(des.Event{At: step.End, Kind: evStepEnd, Target: int32(r), Arg: step.ID}); err != nil {
			return fmt.Errorf("instance %d step: %w", r, err)
		}
	}
	return nil
}

// halfStepNs is the slowest rank's time for one micro-batch of a
// dual-batch-overlapped step: its batch halved (halfBatch) with the
// micro-batch's MoE time.
func (s *Sim) halfStepNs(g *dpGroup, gathered int) int64 {
	moeNs := g.Overlap.HalfMoENs(gathered)
	var h int64
	for i := range g.Ranks {
		hb := halfBatch(g.batches[i])
		hb.MoENs = moeNs
		h = max(h, s.engines[g.Ranks[i]].Slowed(g.Pred.StepTime(&hb)))
	}
	return h
}

// halfBatch is b split as vLLM's micro-batching splits a step in two
// (by tokens): half the prompt tokens, sequences and decodes (rounded
// up), the decode contexts in proportion.
func halfBatch(b perf.Batch) perf.Batch {
	h := b
	h.PrefillTokens, h.PrefillKV, h.PrefillSeqs = (b.PrefillTokens+1)/2, (b.PrefillKV+1)/2, (b.PrefillSeqs+1)/2
	h.NumDecode, h.SpecTokens, h.PadTokens = (b.NumDecode+1)/2, (b.SpecTokens+1)/2, b.PadTokens/2
	h.DPPadTo = (b.DPPadTo + 1) / 2
	if b.NumDecode > 0 {
		h.DecodeKVSum = b.DecodeKVSum * int64(h.NumDecode) / int64(b.NumDecode)
	}
	return h
}

// microBatched says whether every rank's batch reaches its dual-batch
// overlap threshold (an idle rank's dummy batch of one token does not).
func (g *dpGroup) microBatched() bool {
	for i := range g.batches {
		b := &g.batches[i]
		limit := g.DBODecodeTokens
		if b.PrefillTokens > 0 {
			limit = g.DBOPrefillTokens
		}
		if b.Tokens() < limit {
			return false
		}
	}
	return true
}

// pickRank is the rank vLLM's DP load balancer sends a request to at now
// (dpBalancer).
func (s *Sim) pickRank(gi int, now int64) int {
	g := s.groups[gi]
	return g.Ranks[g.bal.pick(now)]
}

// balancedCandidates keeps, of each group whose ranks the load balancer
// picks, only its first rank among the router's candidates: the router
// chooses the instance, the balancer its rank.
func (s *Sim) balancedCandidates() {
	out := s.candidates[:0]
	for _, c := range s.candidates {
		if gi := s.groupOf[c]; gi >= 0 && s.groups[gi].Balance && s.groups[gi].Ranks[0] != c {
			continue
		}
		out = append(out, c)
	}
	s.candidates = out
}

// reserveAfterStep admits handoffs on decode instance inst after its step
// ended, or on every rank of its data-parallel group.
func (s *Sim) reserveAfterStep(inst int, now int64) error {
	if s.groups == nil || s.groupOf[inst] < 0 {
		return s.reserve(inst, now)
	}
	for _, r := range s.groups[s.groupOf[inst]].Ranks {
		if err := s.reserve(r, now); err != nil {
			return err
		}
	}
	return nil
}

// groupsLost resets the load balancer of every data-parallel group with a
// rank among engines, which were just lost: a DP instance is lost with
// all its ranks (its MoE layers' collectives need every one), and it
// comes back as a new process whose balancer knows no counts. Without a
// group it does nothing.
func (s *Sim) groupsLost(engines []int) {
	if s.groups == nil {
		return
	}
	for _, e := range engines {
		if gi := s.groupOf[e]; gi >= 0 {
			s.groups[gi].bal.reset()
		}
	}
}
