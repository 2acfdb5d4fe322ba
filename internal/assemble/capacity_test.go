package assemble

import (
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// Llama-3.1-8B on one RTX 4090 (its embedded profile bundle) at 0.9: the
// KV capacity of docs/engine-time.md's worked example, 2,912 blocks at
// max_num_seqs 128 and 2,787 at 256 (the sampler's profiling pass doubles).
func TestRTX4090Capacity(t *testing.T) {
	for _, c := range []struct {
		seqs, want int
	}{{128, 2912}, {256, 2787}} {
		s := config.Default()
		s.Hardware = "RTX4090"
		s.Engine.MaxNumSeqs = c.seqs
		s.Instances = nil
		s.FillGroups()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		b, err := Build(s, config.Source{})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Instances[0].NumBlocks; got != c.want {
			t.Errorf("max_num_seqs %d: %d blocks, want %d", c.seqs, got, c.want)
		}
	}
}
