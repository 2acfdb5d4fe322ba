package validate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/config"
)

// This file reads a measured run's files (meta.json, the resolved vLLM
// configuration, the cluster file, the workload) with errors that name the
// file, line and column, and refuses settings validation cannot replay.

// meta is the part of meta.json validation reads.
type meta struct {
	Model        string `json:"model"`
	VLLMVersion  string `json:"vllm_version"`
	EngineKwargs struct {
		TensorParallelSize   int     `json:"tensor_parallel_size"`
		DataParallelSize     int     `json:"data_parallel_size"`
		EnableExpertParallel bool    `json:"enable_expert_parallel"`
		MaxNumSeqs           int     `json:"max_num_seqs"`
		MaxNumBatchedTokens  int     `json:"max_num_batched_tokens"`
		MaxModelLen          *int    `json:"max_model_len"`
		Dtype                string  `json:"dtype"`
		KVCacheDtype         string  `json:"kv_cache_dtype"`
		GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	} `json:"engine_kwargs"`
	DatasetHash string          `json:"dataset_hash"`
	Resolved    *resolvedConfig `json:"resolved_config"`
	Hardware    *struct {
		DeviceCount            int    `json:"device_count"`
		DeviceName             string `json:"device_name"`
		DeviceTotalMemoryBytes int64  `json:"device_total_memory_bytes"`
	} `json:"hardware"`
	KVCache *struct {
		NumGPUBlocks         int     `json:"num_gpu_blocks"`
		BlockSize            int     `json:"block_size"`
		GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
		EnablePrefixCaching  *bool   `json:"enable_prefix_caching"`
	} `json:"kv_cache"`
}

// resolvedConfig is the part of meta.json's resolved_config (vLLM's fully
// resolved settings, see meta-schema-example.json) validation reads.
type resolvedConfig struct {
	Compilation *struct {
		CaptureSizes []int           `json:"cudagraph_capture_sizes"`
		Mode         json.RawMessage `json:"cudagraph_mode"`
	} `json:"compilation_config"`
	Model *struct {
		EnforceEager *bool `json:"enforce_eager"`
	} `json:"model_config"`
	Scheduler *struct {
		AsyncScheduling           *bool `json:"async_scheduling"`
		MaxNumSeqs                int   `json:"max_num_seqs"`
		MaxNumBatchedTokens       int   `json:"max_num_batched_tokens"`
		LongPrefillTokenThreshold int   `json:"long_prefill_token_threshold"`
		EnableChunkedPrefill      *bool `json:"enable_chunked_prefill"`
		DisableHybridKVCache      *bool `json:"disable_hybrid_kv_cache_manager"`
	} `json:"scheduler_config"`
	Parallel *struct {
		DisableCustomAllReduce *bool `json:"disable_custom_all_reduce"`
	} `json:"parallel_config"`
}

// graphMode names vLLM's cudagraph_mode as the scenario does. vLLM
// serialises it as a [decode, mixed] pair of 0 (NONE), 1 (PIECEWISE) and
// 2 (FULL), e.g. [2, 1] for FULL_AND_PIECEWISE, or as one of those numbers
// or a name.
func graphMode(raw json.RawMessage) (config.CUDAGraphMode, error) {
	names := map[[2]int]config.CUDAGraphMode{{2, 1}: config.GraphFullAndPiecewise, {2, 0}: config.GraphFullDecodeOnly, {2, 2}: config.GraphFull, {1, 1}: config.GraphPiecewise, {0, 0}: config.GraphNone}
	var pair []int
	if err := json.Unmarshal(raw, &pair); err == nil && len(pair) == 2 {
		if n, ok := names[[2]int{pair[0], pair[1]}]; ok {
			return n, nil
		}
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		if n, ok := names[[2]int{one, one}]; ok {
			return n, nil
		}
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		n := config.CUDAGraphMode(strings.ToLower(name))
		for _, v := range names {
			if v == n {
				return n, nil
			}
		}
	}
	return "", fmt.Errorf("resolved_config.compilation_config.cudagraph_mode %s is not a mode servesim knows (want [2, 1], [2, 0], [2, 2], [1, 1], [0, 0] or a name such as FULL_AND_PIECEWISE)", raw)
}

// clusterFile is the part of llmservingsim-cluster.json validation reads:
// the instance layout and accelerator name only (its link and memory
// figures are another simulator's inputs; see docs/validation.md).
type clusterFile struct {
	Nodes []struct {
		Instances []clusterInstance `json:"instances"`
	} `json:"nodes"`
}

// clusterInstance is one instance (data-parallel rank) of the cluster file.
type clusterInstance struct {
	ModelName string `json:"model_name"`
	Hardware  string `json:"hardware"`
	NPUMem    struct {
		MemSize float64 `json:"mem_size"` // GB
		MemUtil float64 `json:"mem_util"`
	} `json:"npu_mem"`
	NumNPUs int `json:"num_npus"`
	TPSize  int `json:"tp_size"`
	EPSize  int `json:"ep_size"`
}

func readJSON(fsys fs.FS, run, name string, v any) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("%s: %w; a measured run directory holds meta.json, requests.jsonl and llmservingsim-cluster.json", filepath.Join(run, name), err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(run, name), jsonError(data, err))
	}
	return nil
}

// jsonError restates a JSON decoding error in the file's terms: the line
// and column, and for a value of the wrong type the field path and the
// kind of value wanted, not Go's type names.
func jsonError(data []byte, err error) error {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		line, col := lineCol(data, typ.Offset)
		return fmt.Errorf("line %d, column %d: %s: want %s, got a JSON %s", line, col, typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset)
		return fmt.Errorf("line %d, column %d: invalid JSON: %s", line, col, strings.TrimPrefix(syn.Error(), "json: "))
	}
	return err
}

// lineCol is the 1-based line and column of byte offset off in data.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	return line, int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// checkSettings refuses engine settings of a measured run that vLLM
// itself refuses (a size below 1, a memory fraction outside (0, 1]),
// rather than taking them for absent. data is meta.json.
func checkSettings(data []byte, file string) error {
	var raw struct {
		EngineKwargs map[string]any `json:"engine_kwargs"`
		KVCache      map[string]any `json:"kv_cache"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("%s: %w", file, jsonError(data, err))
	}
	for _, f := range []struct {
		section string
		values  map[string]any
		keys    []string
	}{
		{"engine_kwargs", raw.EngineKwargs, []string{"tensor_parallel_size", "data_parallel_size", "max_num_seqs", "max_num_batched_tokens", "max_model_len"}},
		{"kv_cache", raw.KVCache, []string{"num_gpu_blocks", "block_size"}},
	} {
		for _, k := range f.keys {
			v, ok := f.values[k]
			if !ok || v == nil {
				continue // absent: the default
			}
			if x, isNum := v.(float64); !isNum || x < 1 || x != math.Trunc(x) {
				return fmt.Errorf("%s: %s.%s must be a whole number >= 1 (got %v)", file, f.section, k, v)
			}
		}
		if v, ok := f.values["gpu_memory_utilization"]; ok && v != nil {
			if x, isNum := v.(float64); !isNum || !(x > 0 && x <= 1) {
				return fmt.Errorf("%s: %s.gpu_memory_utilization must be in (0, 1] (got %v)", file, f.section, v)
			}
		}
	}
	return nil
}

// findWorkload opens the replayed trace: the given file, or the embedded
// workload whose sha256 equals the run's dataset_hash.
func findWorkload(o Options, m *meta) (io.ReadCloser, string, error) {
	if o.Workload != "" {
		f, err := os.Open(o.Workload)
		if err != nil {
			return nil, "", fmt.Errorf("--workload: %w", err)
		}
		return f, o.Workload, nil
	}
	want := strings.ToLower(m.DatasetHash)
	entries, err := fs.ReadDir(assets.FS(), "workloads")
	if err != nil {
		return nil, "", fmt.Errorf("embedded workloads: %w", err)
	}
	var names []string
	for _, e := range entries {
		p := "workloads/" + e.Name()
		data, err := fs.ReadFile(assets.FS(), p)
		if err != nil {
			return nil, "", fmt.Errorf("embedded workload %s: %w", e.Name(), err)
		}
		names = append(names, e.Name())
		sum := sha256.Sum256(data)
		if want != "" && hex.EncodeToString(sum[:]) == want {
			return io.NopCloser(bytes.NewReader(data)), "builtin:" + strings.TrimSuffix(e.Name(), ".jsonl"), nil
		}
	}
	return nil, "", fmt.Errorf("%s: no embedded workload has dataset_hash %q (embedded: %s); pass the trace the run replayed with --workload FILE",
		filepath.Join(o.Name, "meta.json"), m.DatasetHash, strings.Join(names, ", "))
}
