package serve

import (
	"hash/fnv"
	"testing"
)

// TestTokenCount: ceil(bytes/4) tokens, ids hashed from each 4-byte piece
// (FNV-1a, as hash/fnv computes it), so a shared text prefix is a shared
// id prefix.
func TestTokenCount(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"Hello, simulated world!", 6}, {"héllo", 2}} {
		if got := len(textTokens(nil, c.text)); got != c.want {
			t.Errorf("%q: %d tokens, want %d", c.text, got, c.want)
		}
	}
	h := fnv.New32a()
	h.Write([]byte("wxyz"))
	if got := fnv32a("wxyz"); got != h.Sum32() {
		t.Fatalf("fnv32a = %d, hash/fnv %d", got, h.Sum32())
	}
	a, b := textTokens(nil, "shared prefix, then one"), textTokens(nil, "shared prefix, then two")
	for i := range 5 {
		if a[i] != b[i] {
			t.Fatalf("token %d of a shared prefix differs: %d, %d", i, a[i], b[i])
		}
	}
	if a[5] == b[5] {
		t.Fatal("different text hashed to the same last token")
	}
}
