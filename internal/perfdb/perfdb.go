package perfdb

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// DefaultVersion is the framework version read when Open is given none:
// the vLLM release of every measured run servesim ships.
const DefaultVersion = "0.19.0"

// DB is one system's op tables for one framework version.
type DB struct {
	System, Framework, Version string
	Spec                       SystemSpec
	GEMM                       []GEMMRow
	// Context times prefills from an empty KV cache; Generation one
	// decode token per sequence.
	Context, Generation []AttnRow
	// CustomAR is vLLM's custom all-reduce (Op "all_reduce", Backend
	// "vllm_graph" or "vllm_eager"); NCCL the NCCL collectives (Op
	// all_reduce, all_gather, reduce_scatter or alltoall, Backend "nccl").
	CustomAR, NCCL []CommRow
	MoE            []MoERow
	// MLAContext and MLAGeneration time DeepSeek-V3's whole MLA
	// self-attention module (mla.go); absent on systems without them.
	MLAContext, MLAGeneration []MLARow
	// Tables says where every table was read from.
	Tables []Table
}

// GEMMRow is one measured matrix product (M×K)·(K×N) in Dtype
// (bfloat16, fp8, fp8_block, nvfp4, ...).
type GEMMRow struct {
	Dtype   string
	M, N, K int
	Ms      float64
}

// AttnRow is one measured attention kernel over Batch sequences of Seq
// tokens (context) or with Seq tokens of context (generation), with
// per-GPU query heads Heads and KV heads KVHeads. Window is the sliding
// window (0: full attention).
type AttnRow struct {
	Batch, Seq, Heads, KVHeads, HeadDim, Window int
	KVDtype                                     string
	Ms                                          float64
	// Kernel is the row's kernel_source (e.g. vllm_flash_attn,
	// vllm_flashinfer; empty when the table has no such column).
	Kernel string
}

// CommRow is one measured collective of Size elements of Dtype over GPUs
// ranks.
type CommRow struct {
	Op, Backend, Dtype string
	GPUs               int
	Size               int64
	Ms                 float64
}

// MoERow is one measured fused MoE block on one rank: Tokens tokens of
// width Hidden routed to TopK of Experts experts of width Inter, the
// experts split over TP tensor-parallel and EP expert-parallel ranks,
// with tokens routed by Distribution (e.g. "uniform", "balanced", a
// power-law name).
type MoERow struct {
	Dtype, Distribution                          string
	Tokens, Hidden, Inter, TopK, Experts, TP, EP int
	Ms                                           float64
}

// Table is where one table was read from.
type Table struct {
	// Name is the table's name (gemm_perf, context_attention_perf, ...).
	Name string
	// Path is the file, relative to the database root.
	Path string
	// Version is the framework (or NCCL) version of the folder read.
	Version string
	// Rows is the number of rows read.
	Rows int
}

// tableSpec says where a table lives and how its rows are read.
type tableSpec struct {
	name, op string
	// optional tables may be absent (a system without MoE measurements).
	optional bool
	read     func(db *DB, fsys fs.FS, file string) (int, error)
}

var tables = []tableSpec{
	{name: "gemm_perf", op: "gemm", read: readGEMM},
	{name: "context_attention_perf", op: "attention", read: readContext},
	{name: "generation_attention_perf", op: "attention", read: readGeneration},
	{name: "custom_allreduce_perf", op: "comm", optional: true, read: readCustomAR},
	{name: "moe_perf", op: "moe", optional: true, read: readMoE},
	{name: "mla_context_module_perf", op: "mla", optional: true, read: readMLAContext},
	{name: "mla_generation_module_perf", op: "mla", optional: true, read: readMLAGeneration},
}

// Open reads the tables of system for framework at version (DefaultVersion
// when empty) from fsys, rooted at the database's systems folder.
func Open(fsys fs.FS, system, framework, version string) (*DB, error) {
	if system == "" || strings.ContainsAny(system, `/\`) || system == "." || system == ".." {
		return nil, fmt.Errorf("perfdb: system name %q is not a folder name", system)
	}
	if framework == "" {
		framework = "vllm"
	}
	if version == "" {
		version = DefaultVersion
	}
	db := &DB{System: system, Framework: framework, Version: version}
	spec, err := readSpec(fsys, system)
	if err != nil {
		return nil, err
	}
	db.Spec = spec
	if _, err := fs.Stat(fsys, path.Join("data", system)); err != nil {
		return nil, fmt.Errorf("perfdb: system %s has no tables (data/%s): %w", system, system, err)
	}
	for _, t := range tables {
		file, ver, err := locate(fsys, system, t.op, framework, version, t.name+".parquet")
		if err != nil {
			if t.optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		n, err := t.read(db, fsys, file)
		if err != nil {
			return nil, fmt.Errorf("perfdb: %w", err)
		}
		db.Tables = append(db.Tables, Table{Name: t.name, Path: file, Version: ver, Rows: n})
	}
	if err := readNCCL(db, fsys); err != nil {
		return nil, err
	}
	return db, nil
}

// locate finds the file of a table: in the requested version's folder,
// through its reuse.yaml, or else in the nearest measured version.
func locate(fsys fs.FS, system, op, framework, version, file string) (string, string, error) {
	base := path.Join("data", system, op, framework)
	vers, err := versions(fsys, base)
	if err != nil {
		return "", "", fmt.Errorf("perfdb: %s: no %s tables for %s: %w", system, op, framework, err)
	}
	for _, v := range nearest(vers, version) {
		p := path.Join(base, v, file)
		if _, err := fs.Stat(fsys, p); err == nil {
			return p, v, nil
		}
		donor, err := reuseDonor(fsys, path.Join(base, v, "reuse.yaml"), strings.TrimSuffix(file, ".parquet"))
		if err != nil {
			return "", "", err
		}
		if donor != "" {
			p := path.Join(base, donor, file)
			if _, err := fs.Stat(fsys, p); err != nil {
				return "", "", fmt.Errorf("perfdb: %s reuses version %s, which lacks %s: %w", path.Join(base, v, "reuse.yaml"), donor, file, err)
			}
			return p, donor, nil
		}
	}
	return "", "", fmt.Errorf("perfdb: %s: no version folder holds %s: %w", base, file, fs.ErrNotExist)
}

// versions lists the version folders under base.
func versions(fsys fs.FS, base string) ([]string, error) {
	ents, err := fs.ReadDir(fsys, base)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no version folders: %w", base, fs.ErrNotExist)
	}
	return out, nil
}

// nearest orders versions by preference for want: want itself, then older
// versions newest first, then newer ones oldest first.
func nearest(vers []string, want string) []string {
	out := slices.Clone(vers)
	slices.SortFunc(out, compareVersions)
	var older, newer []string
	var exact []string
	for _, v := range out {
		switch c := compareVersions(v, want); {
		case c == 0:
			exact = append(exact, v)
		case c < 0:
			older = append(older, v)
		default:
			newer = append(newer, v)
		}
	}
	slices.Reverse(older)
	return append(append(exact, older...), newer...)
}

// compareVersions orders dotted versions numerically part by part; a part
// that is not a number compares as text after the numbers.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y string
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		nx, ex := strconv.Atoi(x)
		ny, ey := strconv.Atoi(y)
		switch {
		case ex == nil && ey == nil:
			if nx != ny {
				return nx - ny
			}
		case ex == nil:
			return -1
		case ey == nil:
			return 1
		default:
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		}
	}
	return 0
}

// reuseDonor reads a reuse.yaml and returns the version it names for
// table, or "" when the file is absent or does not list the table.
func reuseDonor(fsys fs.FS, file, table string) (string, error) {
	data, err := fs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("perfdb: %w", err)
	}
	var doc struct {
		Reuse []struct {
			Table       string `yaml:"table"`
			FromVersion string `yaml:"from_version"`
		} `yaml:"reuse"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("perfdb: %s: %w", file, err)
	}
	for _, r := range doc.Reuse {
		if r.Table == table {
			if r.FromVersion == "" {
				return "", fmt.Errorf("perfdb: %s: table %s has no from_version", file, table)
			}
			return r.FromVersion, nil
		}
	}
	return "", nil
}
