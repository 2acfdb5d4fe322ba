package calibrate

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/internal/hw"
)

// Lender names the calibration an accelerator without one of its own in f
// borrows, and why (for the run's description):
//
//   - its catalog entry's calibration_from, which f must calibrate;
//   - else the nearest calibrated architecture: among f's entries not
//     derived from PyTorch profiles whose accelerator cat knows, the same
//     compute capability first, then the same major version (one GPU
//     generation), then any; within a class the smallest
//     |ln(bandwidth ratio)| + |ln(BF16 peak ratio)|; ties by name.
//
// ok is false when f lends nothing (no eligible entry). An unknown
// calibration_from is an error naming the field and what f calibrates.
func (f *File) Lender(acc hw.Accelerator, cat *hw.Catalog) (name, why string, ok bool, err error) {
	if acc.CalibrationFrom != "" {
		if en, found := f.Entry(acc.CalibrationFrom); found && en != nil {
			return f.canonical(acc.CalibrationFrom), "named by its calibration_from", true, nil
		}
		return "", "", false, fmt.Errorf("accelerator %s: calibration_from: %s has no calibration here (calibrated: %s); name one of those, or remove the field to borrow the nearest",
			acc.Name, acc.CalibrationFrom, strings.Join(f.Names(), ", "))
	}
	best, bestClass, bestDist := "", 3, math.Inf(1)
	for _, k := range f.Names() {
		en := f.Accelerators[k]
		if en == nil || en.Derived != "" {
			continue
		}
		c, err := cat.Lookup(k)
		if err != nil {
			continue
		}
		class := 2
		if acc.ComputeCapability > 0 && c.ComputeCapability > 0 {
			switch {
			case acc.ComputeCapability == c.ComputeCapability:
				class = 0
			case math.Floor(acc.ComputeCapability) == math.Floor(c.ComputeCapability):
				class = 1
			}
		}
		d := math.Abs(math.Log(acc.MemBandwidth/c.MemBandwidth)) + math.Abs(math.Log(acc.PeakFLOPSBF16/c.PeakFLOPSBF16))
		if class < bestClass || class == bestClass && d < bestDist {
			best, bestClass, bestDist = k, class, d
		}
	}
	if best == "" {
		return "", "", false, nil
	}
	why = "the nearest calibrated architecture"
	switch bestClass {
	case 0:
		why += fmt.Sprintf(": compute capability %.1f", acc.ComputeCapability)
	case 1:
		why += fmt.Sprintf(": same generation, compute capability %.0f.x", math.Floor(acc.ComputeCapability))
	default:
		why += ": closest memory bandwidth and BF16 peak"
	}
	return best, why, true, nil
}

// canonical returns f's spelling of accelerator name (Entry matches case
// insensitively).
func (f *File) canonical(name string) string {
	for _, k := range f.Names() {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return name
}
