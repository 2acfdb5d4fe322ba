package perfdb

import "io/fs"

// MLARow is one measured multi-head latent attention module (DeepSeek-V3's
// complete self-attention forward of one layer: the query and KV latent
// projections, their norms, rotary embedding, the attention kernel and
// o_proj) on one rank with Heads query heads: Batch sequences of Seq
// tokens (context, from an empty cache) or with Seq tokens of context
// (generation, one token each). KVDtype is the KV cache's dtype, GEMMDtype
// the projections' (bfloat16 or fp8_block).
type MLARow struct {
	Batch, Seq, Heads  int
	KVDtype, GEMMDtype string
	Ms                 float64
}

func mlaCols(seq string) []column {
	return []column{{name: "batch_size", kind: colInt}, {name: seq, kind: colInt}, {name: "num_heads", kind: colInt},
		{name: "kv_cache_dtype", kind: colString}, {name: "gemm_type", kind: colString}, {name: "latency", kind: colFloat}}
}

func readMLA(fsys fs.FS, file, seq string, dst *[]MLARow) (int, error) {
	cols := mlaCols(seq)
	return readTable(fsys, file, cols, func(r *record) error {
		if err := positive(r, cols, 5); err != nil {
			return err
		}
		*dst = append(*dst, MLARow{Batch: int(r.num[0]), Seq: int(r.num[1]), Heads: int(r.num[2]), KVDtype: r.str[3], GEMMDtype: r.str[4], Ms: r.num[5]})
		return nil
	})
}

func readMLAContext(db *DB, fsys fs.FS, file string) (int, error) {
	return readMLA(fsys, file, "isl", &db.MLAContext)
}

func readMLAGeneration(db *DB, fsys fs.FS, file string) (int, error) {
	return readMLA(fsys, file, "step", &db.MLAGeneration)
}

// mlaGrid indexes the MLA module rows of the shape's heads, KV dtype and
// GEMM dtype as a batch x length grid (nil when none match).
func mlaGrid(rows []MLARow, s Shape, logSeq bool) *grid2 {
	var attn []AttnRow
	for _, r := range rows {
		if r.Heads == s.Heads && r.KVDtype == s.KVDtype && r.GEMMDtype == s.GEMMDtype {
			attn = append(attn, AttnRow{Batch: r.Batch, Seq: r.Seq, Heads: r.Heads, KVHeads: 1, HeadDim: 1, KVDtype: r.KVDtype, Ms: r.Ms})
		}
	}
	return newGrid2(attn, Shape{Heads: s.Heads, KVHeads: 1, HeadDim: 1, KVDtype: s.KVDtype}, "", logSeq)
}

// MLAContext is one layer's MLA module over seqs sequences prefilling
// tokens tokens each from an empty cache: log-log in the length along
// each measured batch, then linear in the batch, as ContextAttention.
func (k *Kernels) MLAContext(seqs int, tokens float64) (float64, bool) {
	if k.mlaContext == nil || seqs < 1 || !(tokens > 0) {
		return 0, false
	}
	return k.mlaContext.at(float64(seqs), tokens)
}

// MLAGeneration is one layer's MLA module for n decodes of ctx tokens of
// context: linear in the context along each measured batch, then linear
// in the batch, as GenerationAttention.
func (k *Kernels) MLAGeneration(n int, ctx float64) (float64, bool) {
	if k.mlaGeneration == nil || n < 1 || ctx < 0 {
		return 0, false
	}
	return k.mlaGeneration.at(float64(n), ctx)
}
