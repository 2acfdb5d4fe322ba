package perfdb

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
)

// positive checks that the integer columns of a row are >= 1 and the
// latency > 0.
func positive(r *record, cols []column, latency int) error {
	for i, c := range cols {
		if c.kind == colInt && i != latency && r.num[i] < 1 && !zeroOK[c.name] {
			return fmt.Errorf("column %q is %g, want >= 1", c.name, r.num[i])
		}
	}
	if !(r.num[latency] > 0) {
		return fmt.Errorf("column %q is %g, want > 0", cols[latency].name, r.num[latency])
	}
	return nil
}

// zeroOK are the integer columns where 0 is meaningful.
var zeroOK = map[string]bool{"window_size": true, "step": true}

var gemmCols = []column{{name: "gemm_dtype", kind: colString}, {name: "m", kind: colInt}, {name: "n", kind: colInt}, {name: "k", kind: colInt}, {name: "latency", kind: colFloat}}

func readGEMM(db *DB, fsys fs.FS, file string) (int, error) {
	return readTable(fsys, file, gemmCols, func(r *record) error {
		if err := positive(r, gemmCols, 4); err != nil {
			return err
		}
		db.GEMM = append(db.GEMM, GEMMRow{Dtype: r.str[0], M: int(r.num[1]), N: int(r.num[2]), K: int(r.num[3]), Ms: r.num[4]})
		return nil
	})
}

// attnCols are the attention tables' columns; the sequence axis is isl
// for context rows and step (the context length) for generation rows.
func attnCols(seq string) []column {
	return []column{{name: "batch_size", kind: colInt}, {name: seq, kind: colInt}, {name: "num_heads", kind: colInt}, {name: "num_key_value_heads", kind: colInt},
		{name: "head_dim", kind: colInt}, {name: "window_size", kind: colInt, optional: true}, {name: "kv_cache_dtype", kind: colString}, {name: "latency", kind: colFloat},
		{name: "kernel_source", kind: colString, optional: true}}
}

func readAttn(fsys fs.FS, file, seq string, dst *[]AttnRow) (int, error) {
	cols := attnCols(seq)
	return readTable(fsys, file, cols, func(r *record) error {
		if err := positive(r, cols, 7); err != nil {
			return err
		}
		*dst = append(*dst, AttnRow{Batch: int(r.num[0]), Seq: int(r.num[1]), Heads: int(r.num[2]), KVHeads: int(r.num[3]),
			HeadDim: int(r.num[4]), Window: int(r.num[5]), KVDtype: r.str[6], Ms: r.num[7], Kernel: r.str[8]})
		return nil
	})
}

func readContext(db *DB, fsys fs.FS, file string) (int, error) {
	return readAttn(fsys, file, "isl", &db.Context)
}

func readGeneration(db *DB, fsys fs.FS, file string) (int, error) {
	return readAttn(fsys, file, "step", &db.Generation)
}

var customARCols = []column{{name: "allreduce_dtype", kind: colString}, {name: "num_gpus", kind: colInt}, {name: "message_size", kind: colInt}, {name: "backend", kind: colString}, {name: "latency", kind: colFloat}}

func readCustomAR(db *DB, fsys fs.FS, file string) (int, error) {
	return readTable(fsys, file, customARCols, func(r *record) error {
		if err := positive(r, customARCols, 4); err != nil {
			return err
		}
		db.CustomAR = append(db.CustomAR, CommRow{Op: "all_reduce", Backend: r.str[3], Dtype: r.str[0], GPUs: int(r.num[1]), Size: int64(r.num[2]), Ms: r.num[4]})
		return nil
	})
}

var ncclCols = []column{{name: "op_name", kind: colString}, {name: "nccl_dtype", kind: colString}, {name: "num_gpus", kind: colInt}, {name: "message_size", kind: colInt}, {name: "latency", kind: colFloat}}

// readNCCL reads the NCCL table of the newest NCCL version present, if
// any.
func readNCCL(db *DB, fsys fs.FS) error {
	base := path.Join("data", db.System, "comm", "nccl")
	vers, err := versions(fsys, base)
	if err != nil {
		return nil // no NCCL measurements: collectives fall back to the model
	}
	slices.SortFunc(vers, compareVersions)
	for i := len(vers) - 1; i >= 0; i-- {
		file := path.Join(base, vers[i], "nccl_perf.parquet")
		if _, err := fs.Stat(fsys, file); err != nil {
			continue
		}
		n, err := readTable(fsys, file, ncclCols, func(r *record) error {
			if err := positive(r, ncclCols, 4); err != nil {
				return err
			}
			db.NCCL = append(db.NCCL, CommRow{Op: r.str[0], Backend: "nccl", Dtype: r.str[1], GPUs: int(r.num[2]), Size: int64(r.num[3]), Ms: r.num[4]})
			return nil
		})
		if err != nil {
			return fmt.Errorf("perfdb: %w", err)
		}
		db.Tables = append(db.Tables, Table{Name: "nccl_perf", Path: file, Version: vers[i], Rows: n})
		return nil
	}
	return nil
}

var moeCols = []column{{name: "moe_dtype", kind: colString}, {name: "distribution", kind: colString}, {name: "num_tokens", kind: colInt}, {name: "hidden_size", kind: colInt},
	{name: "inter_size", kind: colInt}, {name: "topk", kind: colInt}, {name: "num_experts", kind: colInt}, {name: "moe_tp_size", kind: colInt}, {name: "moe_ep_size", kind: colInt}, {name: "latency", kind: colFloat}}

func readMoE(db *DB, fsys fs.FS, file string) (int, error) {
	return readTable(fsys, file, moeCols, func(r *record) error {
		if err := positive(r, moeCols, 9); err != nil {
			return err
		}
		db.MoE = append(db.MoE, MoERow{Dtype: r.str[0], Distribution: r.str[1], Tokens: int(r.num[2]), Hidden: int(r.num[3]),
			Inter: int(r.num[4]), TopK: int(r.num[5]), Experts: int(r.num[6]), TP: int(r.num[7]), EP: int(r.num[8]), Ms: r.num[9]})
		return nil
	})
}
