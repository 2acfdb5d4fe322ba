package perf

import (
	"errors"
	"testing"
	"testing/fstest"
)

func TestReadPoints(t *testing.T) {
	fsys := fstest.MapFS{
		"b/tp1/dense.csv":        {Data: []byte("layer,tokens,time_us\nqkv_proj,1,10.5\nqkv_proj,16,11\nact_fn,1,2\n")},
		"b/tp1/per_sequence.csv": {Data: []byte("layer,sequences,time_us\nlm_head,4,700\n")},
		"b/tp1/attention.csv": {Data: []byte("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n" +
			"0,0,0,0,1\n" + // empty step: dropped
			"0,0,8,1024,30\n" +
			"256,512,4,64,50\n")},
	}
	pts, err := ReadPoints(fsys, "b/tp1")
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 6 {
		t.Fatalf("got %d points, want 6: %+v", len(pts), pts)
	}
	for _, c := range []struct {
		i    int
		op   string
		ns   float64
		want Batch
	}{
		{0, "qkv_proj", 10500, Batch{PrefillTokens: 1, PrefillSeqs: 1}},
		{3, "lm_head", 700000, Batch{NumDecode: 4, DecodeKVSum: 4, DecodeKVMax: 1, DecodeKVMin: 1}},
		{4, OpAttention, 30000, Batch{NumDecode: 8, DecodeKVSum: 8192, DecodeKVMax: 1024, DecodeKVMin: 1024}},
		{5, OpAttention, 50000, Batch{PrefillTokens: 256, PrefillKV: 512, PrefillSeqs: 1, NumDecode: 4, DecodeKVSum: 256, DecodeKVMax: 64, DecodeKVMin: 64}},
	} {
		p := pts[c.i]
		if p.Op != c.op || p.Ns != c.ns || p.Batch() != c.want {
			t.Errorf("point %d = %+v (batch %+v), want op %s, %g ns, batch %+v", c.i, p, p.Batch(), c.op, c.ns, c.want)
		}
	}
}

func TestReadPointsErrors(t *testing.T) {
	if _, err := ReadPoints(fstest.MapFS{}, "none/tp1"); !errors.Is(err, ErrNoProfile) {
		t.Errorf("missing folder: %v, want ErrNoProfile", err)
	}
	bad := fstest.MapFS{"b/tp1/dense.csv": {Data: []byte("layer,tokens,time_us\nqkv_proj,x,1\n")}}
	if _, err := ReadPoints(bad, "b/tp1"); err == nil {
		t.Error("bad token count accepted")
	}
}
