package perf

import "math"

// attention times one layer's attention kernel on one rank, modelled on the
// FlashAttention-2 varlen kernel vLLM runs on NVIDIA GPUs other than
// Hopper (with RooflineHW.PackGQA, FlashAttention 3 on Hopper, see below):
//
//   - Work units. Every prefill sequence is cut, per query head, into tiles
//     of AttnTileQ query rows; tile i attends to the sequence's history plus
//     the first (i+1)·tile chunk tokens (causal). In a step that also has
//     prefills, every decode request is a one-row sequence that still costs
//     a whole tile per query head, plus empty tiles up to the longest
//     chunk's tile count (they exit at once, AttnEmptyNs each). A
//     pure-decode step packs the query heads of one KV head (GQA) into one
//     unit per (request, KV head), and splits long contexts into several
//     units (split-KV, FlashAttention's num_splits heuristic on
//     2·AttnUnits slots) when there are few units.
//   - Compute. A unit costs AttnUnitNs plus 4·tile·head_dim FLOPs per KV
//     position at AttnCompute×PeakFLOPS/AttnUnits; AttnUnits run at a time
//     (see schedule). With AttnUnitsPerSM and the GPU's SM count the wave
//     is SMs × AttnUnitsPerSM (SMs × AttnDecodeUnitsPerSM for pure
//     decodes), and a prefill or mixed launch lasts at least its longest
//     unit: a sequence's last query tile, which attends to the whole chunk
//     and its history.
//   - Memory. The distinct KV bytes are read once. Every query head of a
//     prefill or mixed step reads its KV head again; the heads of one GQA
//     group whose units share a wave share the read, and of the remaining
//     re-reads min(1, AttnCacheBytes/W) hit the cache (W: one KV head's KV
//     over the batch) at AttnCacheSpeed× the memory rate. Queries, outputs
//     and the new KV are moved once. Pure decode streams at
//     AttnDecodeMemory, the rest at AttnMemory.
//
// With PackGQA (FlashAttention 3, which packs for every varlen call) the
// query heads of one KV head are stacked into the query rows of one unit
// in prefill and mixed steps too: a prefill sequence has ceil(q·G/tile)
// tiles per KV head (G = query heads per KV head), a decode request one
// unit per KV head, and every unit reads its KV head once.
//
// Time = launch (AttnDecodeLaunchNs for pure decode, else AttnLaunchNs)
// + softmax(compute, memory) with AttnSharpness, plus LaunchNs for the
// split-KV combine kernel, plus, with RooflineHW.SwapGQADecode, the
// query transpose FlashAttention 2 copies before a pure-decode launch of
// two or more requests on two or more KV heads (AttnDecodeCopyNs; with
// one request or one KV head the transpose is a view and costs nothing).
//
// Skewed decode contexts. The terms above see the decode contexts only
// through their sum, i.e. as if every request had the mean context. A real
// batch mixes short and long contexts: each request's units are sized by
// its own context, so the longest requests' units run last and alone (the
// launch's tail wave waits for them), and with a few long contexts the
// KV reads concentrate on fewer units, below the bandwidth a balanced
// launch reaches. A skewed batch therefore costs more than a uniform one
// of the same mean. As in the profile's skew fit, its time lies a fraction
// AttnSkew of the way from the uniform batch at the mean context to the
// uniform batch at the longest one:
//
//	t = t(mean) + AttnSkew·(t(max) − t(mean)).
//
// AttnSkew (AttnDecodeSkew for the GQA-packed pure-decode path, whose
// units and tail differ) is a property of the kernel on the accelerator,
// taken from the calibration bundle's skew measurements, not of a model.
func (r *Roofline) attention(b *Batch) float64 {
	pc, kp, ps, n, q, kvSum, none := attentionInputs(b)
	if none {
		return 0
	}
	t := r.attentionUniform(pc, kp, ps, n, q, kvSum)
	a := r.eff.AttnSkew
	if pc == 0 {
		a = r.eff.AttnDecodeSkew
	}
	if a > 0 && n > 1 {
		if kvMax := float64(b.DecodeKVMax); kvMax*n > kvSum {
			if tMax := r.attentionUniform(pc, kp, ps, n, q, kvMax*n); tMax > t {
				t += a * (tMax - t)
			}
		}
	}
	return t
}

// attentionUniform is attention for a batch whose n decode requests all
// have the context kvSum/n and q query rows each (pc prefill tokens over ps
// sequences with kp tokens of history). A decode's q rows (q > 1 with
// speculative decoding) share its KV reads and fill its query tiles: more
// tiles only when q (GQA-packed: q x the group size) exceeds a tile.
func (r *Roofline) attentionUniform(pc, kp, ps, n, q, kvSum float64) float64 {
	return r.attentionWindowed(pc, kp, ps, n, q, kvSum, 0)
}

// attentionWindowed is attentionUniform for layers that attend to at most
// win tokens (0: no limit): each prefill tile visits at most win KV
// positions beyond its own rows.
func (r *Roofline) attentionWindowed(pc, kp, ps, n, q, kvSum, win float64) float64 {
	launch, tc, tm := r.attentionTerms(pc, kp, ps, n, q, kvSum, win)
	return launch + r.attnPow.softMax(tc, tm)
}

// attentionTerms are attentionWindowed's launch time (its first two terms,
// summed) and the compute and memory times its soft maximum blends.
func (r *Roofline) attentionTerms(pc, kp, ps, n, q, kvSum, win float64) (launch, tc, tm float64) {
	// Two classes of work units: prefill tiles (np units visiting lp KV
	// positions on average) and decode units (nd, ld). uniq: distinct KV
	// bytes; req: KV bytes the units request (a decode packed by GQA reads
	// its KV once, every query head of a prefill or mixed step reads it
	// again).
	// (min and max are the builtins, which give math.Min's and
	// math.Max's results, NaN and signed zeros alike, without a call.)
	var np, lp, nd, ld, uniq, req, extra, empty float64
	var longest float64             // KV positions of the longest work unit
	kvHeadBytes := r.hd * 2 * r.kvb // one token of one KV head
	// Query rows are tiled per query head, or, with packed GQA, per KV
	// head with the group's query heads stacked (gqa rows per token).
	heads, rows := r.heads, 1.0
	if r.hw.PackGQA {
		heads, rows = r.kvHeads, r.gqa
	}
	if pc > 0 {
		chunk, hist := pc/ps, kp/ps
		m := math.Ceil(chunk * rows / r.tileQ)
		perSeq := m*hist + r.tileQ/rows*m*(m-1)/2 + chunk // KV positions over one head's tiles
		if win > 0 {
			perSeq = min(perSeq, m*(win+r.tileQ/rows))
		}
		np = heads * ps * m
		lp = perSeq / m
		// a sequence's last query tile attends to its history and the
		// whole chunk (to the window and its own rows when windowed).
		longest = hist + chunk
		if win > 0 {
			longest = min(longest, win+r.tileQ/rows)
		}
		uniq += (kp + pc) * r.kvBytesPerTok
		req += heads * (kp + pc) * kvHeadBytes // the tiles of one head run together
	}
	if n > 0 {
		mean := kvSum / n
		if pc > 0 {
			nd, ld = heads*n*math.Ceil(q*rows/r.tileQ), mean
			req += heads * kvSum * kvHeadBytes
			// every decode gets as many query tiles as the longest chunk;
			// all but its own exit at once.
			empty = heads * n * max(math.Ceil(pc/ps*rows/r.tileQ)-math.Ceil(q*rows/r.tileQ), 0)
		} else {
			u := n * r.kvHeads * math.Ceil(r.gqa*q/r.tileQ)
			split := r.cachedSplits(u, math.Ceil(mean/128))
			if split > 1 {
				extra = r.eff.LaunchNs
			}
			nd, ld = u*split, mean/split
			req += r.kvHeads * kvSum * kvHeadBytes
		}
		uniq += kvSum * r.kvBytesPerTok
	}
	o := r.eff.AttnUnitNs
	if pc == 0 && r.eff.AttnDecodeUnitNs > 0 {
		o = r.eff.AttnDecodeUnitNs
	}
	if pc == 0 {
		tc = r.scheduleOn(r.decUnits, r.decNsPerKV, 0, 0, nd, ld, o)
	} else {
		tc = r.schedule(np, lp, nd, ld, o)
	}
	if r.smWave && pc > 0 {
		// a work unit runs on one SM: the launch lasts at least as long
		// as its longest unit (a prefill's last query tile; pure decodes,
		// whose units are split to fill the GPU, are left to the waves).
		tc = max(tc, r.attnUnitNsPerKV*max(longest, ld)+o)
	}
	if empty > 0 {
		u := r.units
		if u == 0 {
			u = 1
		}
		tc += empty / u * r.eff.AttnEmptyNs
	}
	// Query heads of one KV head whose units run in the same wave share
	// their KV reads. The units of one head are consecutive, so a wave spans
	// w = AttnUnits/(units per head) heads and a group of G query heads is
	// read about min(G, G/w + 1) times.
	if units := np + nd; req > uniq && r.units > 0 && units > 0 {
		w := r.units * r.heads / units
		reads := min(r.gqa, r.gqa/w+1)
		req = max(uniq, req*reads/r.gqa)
	}
	miss, hits := uniq, 0.0
	if req > uniq {
		hit := 1.0
		if ws := uniq / r.kvHeads; ws > r.eff.AttnCacheBytes {
			hit = r.eff.AttnCacheBytes / ws
		}
		miss += (req - uniq) * (1 - hit)
		hits = (req - uniq) * hit
	}
	miss += (pc + n*q) * (2*r.heads*r.hd*r.b + r.kvBytesPerTok)
	if pc == 0 {
		if r.hw.SwapGQADecode && q == 1 && n >= 2 && r.kvHeads >= 2 && r.gqa > 1 {
			extra += r.eff.AttnDecodeCopyNs
		}
		return r.eff.AttnDecodeLaunchNs + extra, tc, (miss + hits/r.eff.AttnCacheSpeed) / r.attnDecMem * 1e9
	}
	tm = (miss + hits/r.eff.AttnCacheSpeed) / r.attnMem * 1e9
	return r.eff.AttnLaunchNs + extra, tc, tm
}

// schedule is the compute time of two classes of work units (n1 units of
// l1 KV positions, n2 of l2, each costing o ns plus its positions) run
// AttnUnits at a time: the longer class in whole waves, the shorter one
// first filling the idle slots of the longer class's last wave, then in
// whole waves of its own. Without AttnUnits the work is spread evenly over
// the whole device.
func (r *Roofline) schedule(n1, l1, n2, l2, o float64) float64 {
	return r.scheduleOn(r.units, r.attnUnitNsPerKV, n1, l1, n2, l2, o)
}

// scheduleOn is schedule on a wave of units units, each costing c ns per
// KV position.
func (r *Roofline) scheduleOn(units, c, n1, l1, n2, l2, o float64) float64 {
	if units == 0 {
		return c*(n1*l1+n2*l2) + o*(n1+n2)
	}
	if l2 > l1 {
		n1, l1, n2, l2 = n2, l2, n1, l1
	}
	c1, c2 := c*l1+o, c*l2+o
	if n1 == 0 {
		n1, c1, n2 = n2, c2, 0
	}
	w1 := math.Ceil(n1 / units)
	t := w1 * c1
	if n2 > 0 {
		free := (w1*units - n1) * c1
		if rest := n2*c2 - free; rest > 0 {
			t += math.Ceil(rest/(units*c2)) * c2
		}
	}
	return t
}

// splits is FlashAttention-2's num_splits heuristic: with u work units and
// nBlocks KV blocks per unit, the smallest split count whose wave
// efficiency on twice the pure-decode wave's slots (AttnUnits, or SMs ×
// AttnDecodeUnitsPerSM) is within 85 % of the best (1 when the units
// already fill 80 % of the slots). It does not allocate.
func (r *Roofline) splits(u, nBlocks float64) float64 {
	if r.decUnits == 0 {
		return 1
	}
	slots := 2 * r.decUnits
	if u >= 0.8*slots {
		return 1
	}
	maxS := min(min(128, slots), nBlocks)
	eff := func(s float64) float64 {
		w := u * s / slots
		return w / math.Ceil(w)
	}
	// One pass computes each eligible split's efficiency (-1: not
	// eligible, a split count whose blocks per split equal the previous
	// one's); the second picks the first within 85 % of the best.
	var effs [128]float64
	best := 0.0
	prev := 0.0 // ceil(nBlocks/(s-1))
	n := 0
	for s := 1.0; s <= maxS; s++ {
		c := math.Ceil(nBlocks / s)
		effs[n] = -1
		if s == 1 || c != prev {
			effs[n] = eff(s)
			best = max(best, effs[n])
		}
		prev = c
		n++
	}
	for i, e := range effs[:n] {
		if e >= 0.85*best {
			return float64(i + 1)
		}
	}
	return 1
}

// attentionInputs are step b's attention inputs: prefill tokens pc,
// prefill context kp, prefill sequences ps (at least 1), decodes n, query
// rows per decode q (1 + its verified proposals) and the decode context
// sum; none reports a step without prefill or decode tokens.
func attentionInputs(b *Batch) (pc, kp, ps, n, q, kvSum float64, none bool) {
	if b.PrefillTokens <= 0 && b.NumDecode <= 0 {
		return 0, 0, 0, 0, 0, 0, true
	}
	pc, kp, ps, n, q, kvSum = attnInputs(b)
	return pc, kp, ps, n, q, kvSum, false
}
