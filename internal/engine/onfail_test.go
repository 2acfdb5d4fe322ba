package engine

import (
	"errors"
	"strings"
	"testing"
)

// TestOnFailCalledOnce: the hook runs when the first violation is recorded
// and not again; Err keeps the first one.
func TestOnFailCalledOnce(t *testing.T) {
	e, err := New(3, Config{MaxNumSeqs: 2, MaxNumBatchedTokens: 64, BlockSize: 16, NumBlocks: 8}, fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	e.OnFail(func() {
		calls++
		if e.Err() == nil {
			t.Error("hook called before Err is set")
		}
	})
	e.fail(errors.New("first"))
	e.fail(errors.New("second"))
	if calls != 1 {
		t.Fatalf("hook called %d times, want 1", calls)
	}
	if got := e.Err().Error(); !strings.Contains(got, "instance 3") || !strings.Contains(got, "first") {
		t.Fatalf("Err() = %q, want instance 3's first violation", got)
	}
}
