// Package config defines the scenario file: the schema with its defaults
// and validation, strict YAML loading with file:line:col errors, and the
// assembly of a runnable simulation (instances, latency predictors, KV
// capacity, workload source) from a scenario.
//
// A scenario file is decoded on top of Default(), so every field is
// optional; a field the file sets is taken as written and validated, never
// silently replaced. Build resolves names (model, hardware, profile bundle,
// builtin traces) against the embedded catalogs or the user's directories.
package config
