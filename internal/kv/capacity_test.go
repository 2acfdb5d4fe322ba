package kv

import (
	"strings"
	"testing"
)

const runtimeReserve = 1_610_612_736 // 1.5 GiB = 3 << 29

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
			mem:  Memory{Device: 24e9, Utilization: 0.9, Weights: 20e9, Activation: 2e9, KVPerToken: 131072},
			want: "weights 20.00 GB + activation reserve 2.00 GB exceed the usable memory 21.60 GB " +
				"(24.00 GB x gpu_memory_utilization 0.90); use more tensor parallelism, " +
				"a larger accelerator or a higher gpu_memory_utilization",
			blockSize: 16,
		},
		{
			// Weights alone exceed the whole device.
			name: "weights exceed device",
			mem:  Memory{Device: 40e9, Utilization: 1, Weights: 140e9, Activation: 0, KVPerToken: 1},
			want: "weights 140.00 GB + activation reserve 0.00 GB exceed the usable memory 40.00 GB " +
				"(40.00 GB x gpu_memory_utilization 1.00); use more tensor parallelism, " +
				"a larger accelerator or a higher gpu_memory_utilization",
			blockSize: 16,
		},
		{
			// Nothing left at all (free == 0) is the same failure.
			name:      "exactly full",
			mem:       Memory{Device: 80e9, Utilization: 0.5, Weights: 30e9, Activation: 10e9, KVPerToken: 1},
			want:      "weights 30.00 GB + activation reserve 10.00 GB exceed the usable memory 40.00 GB",
			partial:   true,
			blockSize: 16,
		},
		{
			// free = 1e9 - 0.999e9 = 1e6 < one block of 131072*16 = 2_097_152.
			name:      "less than one block",
			mem:       Memory{Device: 1e9, Utilization: 1, Weights: 999e6, KVPerToken: 131072},
			want:      "only 0.001 GB left for KV cache, less than one block of 16 tokens",
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

func TestActivationReserve(t *testing.T) {
	tests := []struct {
		name                 string
		maxBatched, maxSeqs  int
		hidden, inter, vocab int64
		tp, bpe              int
		want                 int64
	}{
		{
			name: "runtime only",
			tp:   1, bpe: 2,
			want: runtimeReserve,
		},
		{
			// Llama-3-8B, tp=1, bf16, 8192 batched tokens, 256 seqs:
			// act    = 8192 * (2*14336 + 4*4096) * 2 = 8192 * 45056 * 2 = 738_197_504
			// logits = 256 * 128256 * 4 * 2                            = 262_668_288
			// total  = 738_197_504 + 262_668_288 + 1_610_612_736       = 2_611_478_528
			name:       "8B tp1",
			maxBatched: 8192, maxSeqs: 256,
			hidden: 4096, inter: 14336, vocab: 128256,
			tp: 1, bpe: 2,
			want: 2_611_478_528,
		},
		{
			// Activations only, tp=2: the MLP output is split, hidden
			// buffers are not: 8192 * (14336 + 16384) * 2 = 503_316_480.
			name:       "8B tp2 activations",
			maxBatched: 8192,
			hidden:     4096, inter: 14336,
			tp: 2, bpe: 2,
			want: 503_316_480 + runtimeReserve,
		},
		{
			// 70B shape, tp=4: 2048 * (2*28672/4 + 4*8192) * 2
			// = 2048 * (14336 + 32768) * 2 = 192_937_984.
			name:       "70B tp4 activations",
			maxBatched: 2048,
			hidden:     8192, inter: 28672,
			tp: 4, bpe: 2,
			want: 192_937_984 + runtimeReserve,
		},
		{
			// fp32 elements: 100 * (2*10 + 4*3) * 4 = 12_800.
			name:       "fp32",
			maxBatched: 100,
			hidden:     3, inter: 10,
			tp: 1, bpe: 4,
			want: 12_800 + runtimeReserve,
		},
		{
			// 2*intermediate/tp is integer division: 2*5/4 = 2 values.
			name:       "mlp split truncates",
			maxBatched: 1,
			inter:      5,
			tp:         4, bpe: 1,
			want: 2 + runtimeReserve,
		},
		{
			// Logits only, tp=1: 3 seqs * 1000 vocab * 4 B * 2 copies = 24_000.
			// Independent of bytesPerElem (always fp32).
			name:    "logits fp32 twice",
			maxSeqs: 3, vocab: 1000,
			tp: 1, bpe: 1,
			want: 24_000 + runtimeReserve,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ActivationReserve(tc.maxBatched, tc.maxSeqs, tc.hidden, tc.inter, tc.vocab, tc.tp, tc.bpe)
			if got != tc.want {
				t.Fatalf("ActivationReserve = %d, want %d", got, tc.want)
			}
		})
	}
}

// The reserve feeds Blocks: more batched tokens can only cost blocks.
func TestActivationReserveMonotone(t *testing.T) {
	prev := int64(0)
	for _, tokens := range []int{0, 512, 2048, 8192, 16384} {
		r := ActivationReserve(tokens, 256, 4096, 14336, 128256, 1, 2)
		if r < prev {
			t.Fatalf("reserve for %d tokens = %d < %d for fewer tokens", tokens, r, prev)
		}
		prev = r
	}
}
