package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
)

// warnLatency prints on w what a run of scenario s would warn of (e.g. an
// accelerator borrowing another's calibration) and a note for every
// instance group whose step latency comes from a PyTorch-derived
// calibration, for commands whose output carries no run summary (search,
// compare, sweep): a calibration is never used silently. Lines already in
// seen (when not nil) are not printed again.
func warnLatency(w io.Writer, seen map[string]bool, s *config.Scenario, src config.Source) error {
	if _, err := buildWarn(w, seen, s, src); err != nil {
		return badInput(err)
	}
	return nil
}

// buildWarn builds scenario s, prints what warnLatency prints for it and
// returns the built scenario, for a caller that runs it next (compare).
// Its error is assembly's, for the caller to name and mark as bad input.
func buildWarn(w io.Writer, seen map[string]bool, s *config.Scenario, src config.Source) (*assemble.Built, error) {
	b, err := assemble.Build(s, src)
	if err != nil {
		return nil, err
	}
	d := b.Describe()
	var lines []string
	for _, x := range d.Warnings {
		lines = append(lines, "servesim: warning: "+x)
	}
	for _, g := range d.Groups {
		if strings.Contains(g.Latency, "PyTorch-derived") {
			lines = append(lines, fmt.Sprintf("servesim: note: instance group %s: step latency %s", g.Name, g.Latency))
		}
	}
	for _, l := range lines {
		if seen == nil || !seen[l] {
			fmt.Fprintln(w, l)
		}
		if seen != nil {
			seen[l] = true
		}
	}
	return b, nil
}
