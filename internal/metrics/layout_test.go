package metrics

import (
	"reflect"
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

// TestSummaryReadsFirstLines: a summary reads a finished request's record
// in its first two cache lines, and in its first three if the request
// went through a P/D handoff (record.go orders the fields so): every
// field past them can change without changing the summary, with or
// without an SLO.
func TestSummaryReadsFirstLines(t *testing.T) {
	colocated := NewRecord(7, 1_000)
	colocated.Priority, colocated.PrefillInstance, colocated.DecodeInstance = 2, 3, 3
	colocated.Outcome, colocated.InputTokens, colocated.OutputTokens, colocated.Generated = Finished, 100, 20, 20
	colocated.CachedTokens, colocated.Preemptions, colocated.Reprefills, colocated.Retries = 32, 1, 2, 3
	colocated.Queued, colocated.Scheduled, colocated.FirstToken, colocated.LastToken, colocated.MaxITL = 1_500, 2_000, 40_000, 900_000, 80_000
	handoff := colocated
	handoff.DecodeInstance = 4
	handoff.PrefillEnd, handoff.Reserved, handoff.TransferStart, handoff.TransferEnd = 30_000, 31_000, 31_000, 39_000
	handoff.HandoffWait, handoff.CapacityWait = 1_000, 500
	for _, tc := range []struct {
		name string
		rec  Record
		from uintptr // the fields from this offset on are not read
	}{
		{"colocated", colocated, 128},
		{"handoff", handoff, 192},
	} {
		for _, slo := range []SLO{{}, {TTFT: 50_000, TPOT: 50_000, E2E: 1e6}} {
			want := summarize(tc.rec, slo)
			changed := tc.rec
			v := reflect.ValueOf(&changed).Elem()
			for i := range v.NumField() {
				if v.Type().Field(i).Offset < tc.from {
					continue
				}
				switch f := v.Field(i); f.Kind() {
				case reflect.String:
					f.SetString(f.String() + "x")
				case reflect.Int, reflect.Int64:
					f.SetInt(f.Int()*3 + 12345)
				default:
					t.Fatalf("field %s past byte %d: a %s, not handled", v.Type().Field(i).Name, tc.from, f.Kind())
				}
			}
			if got := summarize(changed, slo); !reflect.DeepEqual(got, want) {
				t.Errorf("%s (SLO %+v): the summary changed with the fields from byte %d on:\n%+v\nwant\n%+v", tc.name, slo, tc.from, got, want)
			}
		}
	}
}

// summarize is the result of a summary of the one record r.
func summarize(r Record, slo SLO) Result {
	s := NewSummary()
	s.SetSLO(slo)
	s.Add(&r)
	return s.Finish(1e9)
}
