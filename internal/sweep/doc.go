// Package sweep runs a scenario over a parameter grid: the cartesian
// product of values of scenario fields, each point the base scenario with
// those fields set.
//
// Fields are set generically: the scenario is marshalled to a JSON tree, the
// path (e.g. "instances[1].count") is set in the tree, and the tree is
// decoded strictly with config.Parse, so every point is validated exactly as
// a scenario file is. Points are numbered in a fixed order (the first grid
// axis varies slowest) and simulated in parallel, one single-threaded
// deterministic simulation per worker; rows are emitted in point order, so
// the output is the same for any number of workers. A Shard runs the points
// with index % n == i, so a sweep can be spread over the tasks of a Slurm
// array or a Kubernetes Indexed Job; Merge joins the shard outputs into
// exactly the output of a single process.
package sweep
