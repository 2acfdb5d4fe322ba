// Package config defines the scenario file: the schema with its defaults
// and validation, and strict YAML loading with file:line:col errors.
//
// A scenario file is decoded on top of Default(), so every field is
// optional; a field the file sets is taken as written and validated, never
// silently replaced. Turning a validated scenario into a runnable
// simulation is package assemble's job; config imports nothing of the
// simulator but the workload schema.//
// Files: scenario.go holds the top-level Scenario and its small sections
// (limits, SLO, workload); choices.go the typed choices (router, role,
// handoff policy, predictor kind...), each a string type with one constant
// per name, so that the rest of the simulator compares constants, never
// names; engine.go the engine and predictor sections
// with speculative decoding; group.go instance groups, MoE and
// parallelism; handoff.go the P/D handoff and links; kvtiers.go the KV
// tiers; defaults.go the defaults; validate.go Validate; bounds.go the
// fixed numeric bounds; load.go strict loading, with intfields.go's schema
// walk, yamlerr.go and fileerr.go for its errors.
package config
