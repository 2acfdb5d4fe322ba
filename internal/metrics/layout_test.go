package metrics

import (
	"testing"
	"unsafe"
)

// TestHistLen: a dist's counts arrays end just past the index of the
// highest trackable value.
func TestHistLen(t *testing.T) {
	if got := histIndex(histHighUs) + 1; got != histLen {
		t.Fatalf("histIndex(histHighUs)+1 = %d, histLen %d", got, histLen)
	}
	if got := histIndex(toUs(1 << 62)); got != histLen-1 {
		t.Fatalf("a capped value's index is %d, want %d", got, histLen-1)
	}
}

// TestDistLayout: the fields add and addN read fill a dist's first 64
// bytes, a dist is 128 bytes, and a Summary's dists start on a line.
func TestDistLayout(t *testing.T) {
	var d dist
	if s := unsafe.Sizeof(d); s != 128 {
		t.Errorf("dist is %d bytes, want 128", s)
	}
	for name, o := range map[string]uintptr{"nbounds": unsafe.Offsetof(d.nbounds), "spillAt": unsafe.Offsetof(d.spillAt),
		"npend": unsafe.Offsetof(d.npend), "narrow": unsafe.Offsetof(d.narrow), "pend": unsafe.Offsetof(d.pend)} {
		if o >= 64 {
			t.Errorf("%s at offset %d, past the first line", name, o)
		}
	}
	s := NewSummary()
	for name, off := range map[string]uintptr{"ttft": unsafe.Offsetof(s.ttft), "itl": unsafe.Offsetof(s.itl),
		"transfer": unsafe.Offsetof(s.transfer), "engTTFT": unsafe.Offsetof(s.engTTFT)} {
		if (uintptr(unsafe.Pointer(s))+off)%64 != 0 {
			t.Errorf("Summary.%s at offset %d of %p: not on a 64-byte line", name, off, s)
		}
	}
}

// TestRecordLayout: a record's byte-sized fields fill the hole after its
// int32s, so that it is 240 bytes, four cache lines when it starts on one
// (as in an engine's request slot or engine.Prefilled).
func TestRecordLayout(t *testing.T) {
	var r Record
	if n := unsafe.Sizeof(r); n != 240 {
		t.Errorf("a record is %d bytes, want 240 (record.go)", n)
	}
	if a := unsafe.Alignof(r); a != 8 {
		t.Errorf("a record is aligned on %d bytes, want 8", a)
	}
}
