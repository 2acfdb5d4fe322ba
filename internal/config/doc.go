// Package config defines the scenario file: the schema with its defaults
// and validation, and strict YAML loading with file:line:col errors.
//
// A scenario file is decoded on top of Default(), so every field is
// optional; a field the file sets is taken as written and validated, never
// silently replaced. Turning a validated scenario into a runnable
// simulation is package assemble's job; config imports nothing of the
// simulator but the workload schema.
package config
