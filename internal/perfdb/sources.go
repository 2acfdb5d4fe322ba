package perfdb

import (
	"fmt"
	"io/fs"
	"slices"
)

// KernelSources lists the distinct kernel_source values of the table file
// (the kernel or library each row was measured with, e.g.
// vllm_flash_attn for attention measured through vLLM's FlashAttention
// backend), sorted; none when the file has no such column. With where
// set, only rows whose string column where equals value count (e.g.
// kv_cache_dtype bfloat16).
func KernelSources(fsys fs.FS, file, where, value string) ([]string, error) {
	cols := []column{{name: "kernel_source", kind: colString, optional: true}}
	if where != "" {
		cols = append(cols, column{name: where, kind: colString})
	}
	var out []string
	_, err := readTable(fsys, file, cols, func(r *record) error {
		if where != "" && r.str[1] != value {
			return nil
		}
		if s := r.str[0]; s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("perfdb: %w", err)
	}
	slices.Sort(out)
	return out, nil
}
