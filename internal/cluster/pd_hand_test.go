package cluster

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// TestNewHandRecycled checks that a recycled hand comes out of newHand
// exactly as a hand built whole would (newHand sets only the fields that
// start non-zero and the request, relying on freeHand and freeBody to
// clear the rest).
func TestNewHandRecycled(t *testing.T) {
	tests := []struct {
		name string
		req  workload.Request
		now  int64
	}{
		{"plain", workload.Request{ID: 7, InputTokens: 100, OutputTokens: 20, Arrival: 5}, 5},
		{"session and priority", workload.Request{ID: 9, Session: "s1", InputTokens: 3, OutputTokens: 1, Priority: -2, InputIDs: []int32{1, 2, 3}}, 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := hand{handCore: handCore{st: hNew, since: tc.now, d: -1, pSlot: -1, dSlot: -1, id: tc.req.ID}, handBody: &handBody{bodyFields: bodyFields{prefillEnd: -1}, req: tc.req}}
			want.rec = metrics.NewRecord(tc.req.ID, tc.now)
			want.rec.Session, want.rec.InputTokens, want.rec.OutputTokens = tc.req.Session, tc.req.InputTokens, tc.req.OutputTokens
			want.rec.Priority = tc.req.Priority

			var p pd
			used := p.newHand(&workload.Request{ID: 1, Session: "old", InputTokens: 50}, 1)
			// A hand at the end of its life: every field of its core and
			// body set.
			fillAll(reflect.ValueOf(&used.handCore).Elem())
			fillAll(reflect.ValueOf(used.handBody).Elem())
			used.owned = []kv.BlockID{4}
			p.freeHand(used)
			got := p.newHand(&tc.req, tc.now)
			if got != used {
				t.Fatal("newHand did not reuse the freed hand")
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("recycled hand\n%+v\nwant\n%+v", *got, want)
			}
			if fresh := (&pd{}).newHand(&tc.req, tc.now); !reflect.DeepEqual(*fresh, want) {
				t.Errorf("new hand\n%+v\nwant\n%+v", *fresh, want)
			}
		})
	}
}

// fillAll sets every field of the struct v, exported or not, to a
// non-zero value (numbers to 7, booleans to true, strings to "x"),
// recursively through nested structs; other kinds are left alone.
func fillAll(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		f := reflect.NewAt(v.Field(i).Type(), unsafe.Pointer(v.Field(i).UnsafeAddr())).Elem()
		switch f.Kind() {
		case reflect.Struct:
			fillAll(f)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(7)
		case reflect.Uint8:
			f.SetUint(7)
		case reflect.Float64:
			f.SetFloat(7)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("x")
		}
	}
}
