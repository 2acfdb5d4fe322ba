package kv

import (
	"strings"
	"testing"
)

func TestMemoryBlocks(t *testing.T) {
	tests := []struct {
		name      string
		mem       Memory
		blockSize int
		want      int
	}{
		{
			// Llama-3-8B-like, tp=1, 80 GB at 0.9: usable 72e9.
			// free = 72e9 - 16e9 - 2_611_478_528 = 53_388_521_472
			// block = 131072 B/token * 16 = 2_097_152 B
			// 53_388_521_472 / 2_097_152 = 25457.63 -> 25457
			name:      "8B tp1 80GB",
			mem:       Memory{Device: 80e9, Utilization: 0.9, Weights: 16e9, Activation: 2_611_478_528, KVPerToken: 131072},
			blockSize: 16,
			want:      25457,
		},
		{
			// free = 72e9 - 35e9 - 3e9 = 34e9; block = 163840*16 = 2_621_440
			// 34e9 / 2_621_440 = 12969.97 -> 12969
			name:      "70B tp2 per rank",
			mem:       Memory{Device: 80e9, Utilization: 0.9, Weights: 35e9, Activation: 3e9, KVPerToken: 163840},
			blockSize: 16,
			want:      12969,
		},
		{
			// usable 24e9*0.95 = 22.8e9; free = 6.8e9; block = 131072*32 = 4_194_304
			// 6.8e9 / 4_194_304 = 1621.26 -> 1621
			name:      "24GB block 32",
			mem:       Memory{Device: 24e9, Utilization: 0.95, Weights: 14e9, Activation: 2e9, KVPerToken: 131072},
			blockSize: 32,
			want:      1621,
		},
		{
			// free = 1000 - 100 - 100 = 800 = 5 blocks of 10*16 exactly.
			name:      "exact fit",
			mem:       Memory{Device: 1000, Utilization: 1, Weights: 100, Activation: 100, KVPerToken: 10},
			blockSize: 16,
			want:      5,
		},
		{
			// One byte short of the fifth block: 799 / 160 = 4.99 -> 4.
			name:      "one byte short",
			mem:       Memory{Device: 1000, Utilization: 1, Weights: 101, Activation: 100, KVPerToken: 10},
			blockSize: 16,
			want:      4,
		},
		{
			// Usable bytes are truncated: 1001 * 0.5 = 500.5 -> 500 -> 5 blocks of 100.
			name:      "usable truncated",
			mem:       Memory{Device: 1001, Utilization: 0.5, KVPerToken: 1},
			blockSize: 100,
			want:      5,
		},
		{
			// 999 * 0.5 = 499.5 -> 499 -> 4 blocks of 100.
			name:      "usable truncated below a block",
			mem:       Memory{Device: 999, Utilization: 0.5, KVPerToken: 1},
			blockSize: 100,
			want:      4,
		},
		{
			// Exactly one block: free = 160 = 10*16.
			name:      "single block",
			mem:       Memory{Device: 360, Utilization: 1, Weights: 100, Activation: 100, KVPerToken: 10},
			blockSize: 16,
			want:      1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.mem.Blocks(tc.blockSize)
			if err != nil {
				t.Fatalf("Blocks(%d) error: %v", tc.blockSize, err)
			}
			if got != tc.want {
				t.Fatalf("Blocks(%d) = %d, want %d", tc.blockSize, got, tc.want)
			}
		})
	}
}

func TestMemoryBlocksErrors(t *testing.T) {
	tests := []struct {
		name      string
		mem       Memory
		blockSize int
		want      string // the full message, or a substring when partial
		partial   bool
	}{
		{
			// usable 24e9*0.9 = 21.6e9 < 20e9 + 2e9.
			name: "weights exceed memory",
			mem:  Memory{Device: 24 << 30, Utilization: 0.9, Weights: 20 << 30, Activation: 1 << 30, NonTorch: 1 << 30, KVPerToken: 131072},
			want: "weights 20.00 GiB + profiled activations 1.00 GiB + non-torch memory 1.00 GiB exceed the usable memory 21.60 GiB " +
				"(24.00 GiB x gpu_memory_utilization 0.90); use more tensor parallelism, " +
				"a larger accelerator or a higher gpu_memory_utilization",
			blockSize: 16,
		},
		{
			// Weights alone exceed the whole device.
			name: "weights exceed device",
			mem:  Memory{Device: 40 << 30, Utilization: 1, Weights: 140 << 30, Activation: 0, KVPerToken: 1},
			want: "weights 140.00 GiB + profiled activations 0.00 GiB + non-torch memory 0.00 GiB exceed the usable memory 40.00 GiB " +
				"(40.00 GiB x gpu_memory_utilization 1.00); use more tensor parallelism, " +
				"a larger accelerator or a higher gpu_memory_utilization",
			blockSize: 16,
		},
		{
			// Nothing left at all (free == 0) is the same failure.
			name:      "exactly full",
			mem:       Memory{Device: 80 << 30, Utilization: 0.5, Weights: 30 << 30, Activation: 9 << 30, NonTorch: 1 << 30, KVPerToken: 1},
			want:      "weights 30.00 GiB + profiled activations 9.00 GiB + non-torch memory 1.00 GiB exceed the usable memory 40.00 GiB",
			partial:   true,
			blockSize: 16,
		},
		{
			// free = 1 GiB - (1 GiB - 1 MiB) = 1 MiB < one block of 131072*16 = 2 MiB.
			name:      "less than one block",
			mem:       Memory{Device: 1 << 30, Utilization: 1, Weights: 1<<30 - 1<<20, KVPerToken: 131072},
			want:      "only 0.001 GiB left for KV cache, less than one block of 16 tokens",
			blockSize: 16,
		},
		{
			// free = 2_097_151: one byte short of the only block.
			name:      "one byte short of one block",
			mem:       Memory{Device: 2_097_151, Utilization: 1, KVPerToken: 131072},
			want:      "less than one block of 16 tokens",
			partial:   true,
			blockSize: 16,
		},
		{
			name:      "zero block size",
			mem:       Memory{Device: 80e9, Utilization: 0.9, Weights: 16e9, KVPerToken: 131072},
			want:      "block size must be > 0 tokens (got 0)",
			blockSize: 0,
		},
		{
			// Zero KV bytes per token would mean infinitely many blocks.
			name:      "no KV bytes per token",
			mem:       Memory{Device: 80e9, Utilization: 0.9, Weights: 16e9},
			want:      "KV bytes per token must be > 0",
			partial:   true,
			blockSize: 16,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.mem.Blocks(tc.blockSize)
			if err == nil {
				t.Fatalf("Blocks(%d) = %d, want error %q", tc.blockSize, n, tc.want)
			}
			if n != 0 {
				t.Errorf("Blocks returned %d blocks with its error", n)
			}
			if tc.partial && !strings.Contains(err.Error(), tc.want) ||
				!tc.partial && err.Error() != tc.want {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
		})
	}
}

func TestProfilePeak(t *testing.T) {
	tests := []struct {
		name string
		s    ProfileShape
		want int64
	}{
		{
			// Llama-3.1-8B bf16 tp=1, 2048 tokens, 128 seqs:
			// forward = 2048 * (3*14336 + 6144 + 4096) * 2 = 2048 * 53248 * 2 = 218_103_808
			// sampler = 128 * 128256 * 16                              = 262_668_288
			name: "8B tp1",
			s:    ProfileShape{Tokens: 2048, Seqs: 128, Hidden: 4096, Intermediate: 14336, QKV: 6144, Vocab: 128256, TP: 1, BytesPerElem: 2},
			want: 480_772_096,
		},
		{
			// tp=2 splits the MLP and QKV widths, not the hidden state or
			// the gathered logits: 2048 * ((43008+6144)/2 + 4096) * 2 =
			// 2048 * 28672 * 2 = 117_440_512; sampler as above.
			name: "8B tp2",
			s:    ProfileShape{Tokens: 2048, Seqs: 128, Hidden: 4096, Intermediate: 14336, QKV: 6144, Vocab: 128256, TP: 2, BytesPerElem: 2},
			want: 117_440_512 + 262_668_288,
		},
		{
			// Forward only, fp32: 10 * (3*5 + 3 + 2) * 4 = 800.
			name: "fp32 forward",
			s:    ProfileShape{Tokens: 10, Hidden: 2, Intermediate: 5, QKV: 3, TP: 1, BytesPerElem: 4},
			want: 800,
		},
		{
			// Sampler only: 3 * 1000 * 16 = 48_000, whatever the dtype.
			name: "sampler",
			s:    ProfileShape{Seqs: 3, Vocab: 1000, TP: 1, BytesPerElem: 1},
			want: 48_000,
		},
		{name: "empty", s: ProfileShape{}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProfilePeak(tc.s); got != tc.want {
				t.Fatalf("ProfilePeak = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestWorkedExample pins the worked example of docs/engine-time.md:
// Llama-3.1-8B (bf16) on one RTX 4090 (23.65 GiB as CUDA reports it) at
// gpu_memory_utilization 0.9, max_num_batched_tokens 2048, max_num_seqs 128.
//
//	usable   = floor(25_393_994_137 * 0.9)            = 22_854_594_723
//	weights  = 8_030_261_248 * 2 + 131072 * 128 * 2  = 16_094_076_928 (14.99 GiB)
//	profile  = 218_103_808 + 262_668_288              =    480_772_096
//	nontorch = 0.16 GiB                               =    171_798_691
//	free     = 6_107_947_008 (5.69 GiB)
//	blocks   = 6_107_947_008 / (131072 * 16)          = 2912.5 -> 2912
func TestWorkedExample(t *testing.T) {
	gib2365 := 23.65
	m := Memory{
		Device:      int64(gib2365 * (1 << 30)),
		Utilization: 0.9,
		Weights:     8_030_261_248*2 + 131072*128*2,
		Activation:  ProfilePeak(ProfileShape{Tokens: 2048, Seqs: 128, Hidden: 4096, Intermediate: 14336, QKV: 6144, Vocab: 128256, TP: 1, BytesPerElem: 2}),
		NonTorch:    NonTorchBytes(1),
		KVPerToken:  131072,
	}
	if m.Device != 25_393_994_137 {
		t.Fatalf("device bytes %d", m.Device)
	}
	n, err := m.Blocks(16)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2912 {
		t.Fatalf("blocks = %d, want 2912", n)
	}
}

// More batched tokens or sequences can only cost blocks.
func TestProfilePeakMonotone(t *testing.T) {
	prev := int64(-1)
	for _, tokens := range []int{0, 512, 2048, 8192, 16384} {
		for _, seqs := range []int{1, 256} {
			r := ProfilePeak(ProfileShape{Tokens: tokens, Seqs: seqs, Hidden: 4096, Intermediate: 14336, QKV: 6144, Vocab: 128256, TP: 1, BytesPerElem: 2})
			if seqs == 1 && r < prev {
				t.Fatalf("peak for %d tokens = %d < %d for fewer tokens", tokens, r, prev)
			}
			if seqs == 1 {
				prev = r
			}
		}
	}
}
