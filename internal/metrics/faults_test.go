package metrics

import (
	"strings"
	"testing"
)

func TestFaultTableLines(t *testing.T) {
	tests := []struct {
		name               string
		f                  FaultResult
		faultLine, scaling bool
	}{
		{"autoscaler only", FaultResult{ScaleUps: 1}, false, true},
		{"faults injected, none struck", FaultResult{Injected: true}, true, false},
		{"faults and scaling", FaultResult{Injected: true, Losses: 1, ScaleDowns: 2}, true, true},
		{"counts without the flag still print", FaultResult{Retried: 3}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			faultTable(&b, &tc.f)
			out := b.String()
			if got := strings.Contains(out, "Faults:"); got != tc.faultLine {
				t.Errorf("fault line printed %v, want %v:\n%s", got, tc.faultLine, out)
			}
			if got := strings.Contains(out, "Autoscaler:"); got != tc.scaling {
				t.Errorf("autoscaler line printed %v, want %v:\n%s", got, tc.scaling, out)
			}
			if !strings.Contains(out, "GPU-hours:") {
				t.Errorf("no GPU-hours line:\n%s", out)
			}
		})
	}
}
