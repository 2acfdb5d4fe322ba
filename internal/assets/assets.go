// Package assets holds the reference data compiled into the servesim binary:
// the measured step-latency profile of Llama-3.1-8B on an RTX PRO 6000, the
// HuggingFace model configs, the layer catalogs, the bundled workloads and the
// measured vLLM runs used for validation.
//
// Everything is exposed as a read-only fs.FS rooted at the data folder, so the
// same loaders read embedded files and user directories (os.DirFS) alike.
// The files come from the LLMServingSim project under the MIT licence; see
// data/LICENSE.LLMServingSim. The per-op performance database under
// data/aiconfigurator comes from NVIDIA AIConfigurator under the Apache
// License 2.0; see data/aiconfigurator/LICENSE. The *.compact files beside
// the profile bundles' CSVs are the parsed tables in a compact binary form
// that loads without parsing (perf.CompactTables), generated from those
// CSVs by go generate.
package assets

import (
	"embed"
	"io/fs"
)

//go:generate go run ./gencompact

//go:embed data
var data embed.FS

// FS returns the embedded data tree. Paths are relative to the data folder,
// e.g. "models/meta-llama/Llama-3.1-8B.json".
func FS() fs.FS {
	sub, err := fs.Sub(data, "data")
	if err != nil {
		// fs.Sub only fails on an invalid path literal; "data" is valid.
		panic(err)
	}
	return sub
}
