#!/bin/bash
# Submit a sharded servesim sweep to Slurm: an array job of N tasks
# (sweep.sbatch, one shard each) and a merge job that runs once every task
# has succeeded (merge.sbatch).
#
#   examples/slurm/submit.sh [N]        # N shards, default 4
#
# Run it from the directory the paths are relative to. SCENARIO, GRID,
# OUTDIR, RESULTS, SERVESIM and SWEEP_ARGS are passed to the jobs (see
# sweep.sbatch); extra sbatch options can go in SBATCH_ARGS, e.g.
# SBATCH_ARGS="--partition=cpu --account=me".
# The last line printed is "<array job id> <merge job id>".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=${1:-4}
case $n in
  ''|*[!0-9]*|0) echo "submit.sh: N must be a positive integer (got '$n')" >&2; exit 2 ;;
esac

# shellcheck disable=SC2086 # SBATCH_ARGS is a list of options
array=$(sbatch --parsable ${SBATCH_ARGS:-} --array="0-$((n - 1))" "$here/sweep.sbatch")
array=${array%%;*} # --parsable prints "jobid[;cluster]"
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterok:$array" --kill-on-invalid-dep=yes "$here/merge.sbatch")
merge=${merge%%;*}
echo "submitted sweep array job $array ($n tasks) and merge job $merge (after the array succeeds)" >&2
echo "$array $merge"
