package dbcheck

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/perfdb"
)

// SystemInfo is what a database holds for one system.
type SystemInfo struct {
	Name string            `json:"system"`
	Spec perfdb.SystemSpec `json:"spec"`
	// Versions lists, per op folder (gemm, attention, comm, moe, mla and
	// comm/nccl), the version folders present.
	Versions map[string][]string `json:"versions"`
	// Tables are the tables a run at the requested version reads: file,
	// version read (the nearest measured one when the requested version
	// lacks the table) and rows.
	Tables []perfdb.Table `json:"tables"`
	// Sources lists, per table read, the kernels its rows were measured
	// with (the kernel_source column).
	Sources map[string][]string `json:"kernel_sources"`
}

// opFolders are the op folders whose versions Inventory lists.
var opFolders = []string{"gemm/vllm", "attention/vllm", "comm/vllm", "moe/vllm", "mla/vllm", "comm/nccl"}

// Inventory opens the systems of fsys (perfdb.Systems; only the one named
// when system is set) at framework vLLM and version (perfdb.DefaultVersion
// when empty).
func Inventory(fsys fs.FS, system, version string) ([]SystemInfo, error) {
	names, err := perfdb.Systems(fsys)
	if err != nil {
		return nil, fmt.Errorf("perfdb: %w", err)
	}
	if len(names) == 0 {
		return nil, errors.New("perfdb: no systems: the folder holds no <system>.yaml with a data/<system> folder beside it (give the database's systems folder)")
	}
	if system != "" {
		if !slices.Contains(names, system) {
			return nil, fmt.Errorf("perfdb: no system %s (the database has %s)", system, strings.Join(names, ", "))
		}
		names = []string{system}
	}
	var out []SystemInfo
	for _, n := range names {
		db, err := perfdb.Open(fsys, n, "vllm", version)
		if err != nil {
			return nil, err
		}
		si := SystemInfo{Name: n, Spec: db.Spec, Tables: db.Tables, Versions: map[string][]string{}, Sources: map[string][]string{}}
		for _, t := range db.Tables {
			if si.Sources[t.Name], err = perfdb.KernelSources(fsys, t.Path, "", ""); err != nil {
				return nil, err
			}
		}
		for _, op := range opFolders {
			ents, err := fs.ReadDir(fsys, path.Join("data", n, op))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("perfdb: %w", err)
			}
			for _, e := range ents {
				if e.IsDir() {
					si.Versions[op] = append(si.Versions[op], e.Name())
				}
			}
		}
		out = append(out, si)
	}
	return out, nil
}

// WriteInventory prints the systems as a table: one line per table read,
// with the versions its op folder holds.
func WriteInventory(w io.Writer, where string, systems []SystemInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s database: %d systems\n", where, len(systems))
	fmt.Fprintf(&b, "%-20s %-26s %-8s %8s  %-14s %s\n", "system", "table", "read", "rows", "versions", "kernels")
	for _, s := range systems {
		for i, t := range s.Tables {
			name := ""
			if i == 0 {
				name = s.Name
			}
			folder := opFolder(t.Path)
			fmt.Fprintf(&b, "%-20s %-26s %-8s %8d  %-14s %s\n", name, t.Name, t.Version, t.Rows, strings.Join(s.Versions[folder], " "), strings.Join(s.Sources[t.Name], " "))
		}
		fmt.Fprintf(&b, "%-20s %.0f GB at %.0f GB/s, %.0f dense BF16 TFLOPS, %d GPUs per node\n", "",
			s.Spec.MemCapacity/1e9, s.Spec.MemBW/1e9, s.Spec.BF16FLOPS/1e12, s.Spec.GPUsPerNode)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// opFolder is the op/framework folder of a table file
// data/<system>/<op>/<framework>/<version>/<file>.
func opFolder(file string) string {
	parts := strings.Split(file, "/")
	if len(parts) < 4 {
		return ""
	}
	return parts[2] + "/" + parts[3]
}
