// Package slurm holds the integration test of the Slurm example
// (examples/slurm): see run.sh. It is part of `go test ./...`: it installs
// Debian's slurm-wlm and munge (root and apt needed; where they cannot be
// installed it is skipped with the reason), starts a one-node cluster and
// takes about a minute. `go test -short` or SERVESIM_SLURM_TEST=0 skip it.
//
//	go test ./test/slurm -v
package slurm

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSlurmArraySweep starts a one-node Slurm cluster, runs the example
// sweep as a 4-task array job with its dependent merge job, and checks the
// merged CSV equals a single-process sweep (run.sh does the work; exit
// status 77 means it could not run here, and says why).
func TestSlurmArraySweep(t *testing.T) {
	if testing.Short() || os.Getenv("SERVESIM_SLURM_TEST") == "0" {
		t.Skip("Slurm integration test skipped (-short or SERVESIM_SLURM_TEST=0); it needs root and apt, see test/slurm/run.sh")
	}
	cmd := exec.Command("bash", "run.sh")
	out, err := cmd.CombinedOutput()
	t.Logf("run.sh output:\n%s", out)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 77:
		reason := "run.sh skipped"
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "SKIP: ") {
				reason = strings.TrimPrefix(l, "SKIP: ")
			}
		}
		t.Skip(reason)
	default:
		t.Fatalf("run.sh: %v", err)
	}
}
