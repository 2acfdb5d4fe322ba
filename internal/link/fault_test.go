package link

import "testing"

// TestSetBandwidthMidTransfer: 1 GB at 1 GB/s; at 0.5 s the NIC drops to
// 0.5 GB/s, so the remaining 0.5 GB takes 1 s more: done at 1.5 s; a
// restore at 1 s brings it back: 0.5 GB at 0.5 GB/s from 0.5 s gives
// 0.25 GB by 1 s, the other 0.25 GB at 1 GB/s ends at 1.25 s.
func TestSetBandwidthMidTransfer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restore bool
		want    int64
	}{{"degraded", false, 1_500_000_000}, {"degraded then restored", true, 1_250_000_000}} {
		t.Run(tc.name, func(t *testing.T) {
			n := New()
			a, b := must(n.AddEndpoint(1e9, 0)), must(n.AddEndpoint(1e9, 0))
			must(n.Start(0, a, b, 1e9, 7))
			if err := n.SetBandwidth(500_000_000, a, 0.5e9); err != nil {
				t.Fatal(err)
			}
			if tc.restore {
				if err := n.SetBandwidth(1_000_000_000, a, 1e9); err != nil {
					t.Fatal(err)
				}
			}
			if bw := must(n.Bandwidth(a)); bw != map[bool]float64{false: 0.5e9, true: 1e9}[tc.restore] {
				t.Fatalf("bandwidth %g after the changes", bw)
			}
			at, ok := n.NextEvent()
			if !ok || at != tc.want {
				t.Fatalf("next event at %d (%v), want %d", at, ok, tc.want)
			}
			done := must(n.Advance(at, nil))
			if len(done) != 1 || done[0].Tag != 7 || done[0].At != tc.want {
				t.Fatalf("completions %+v, want tag 7 at %d", done, tc.want)
			}
		})
	}
}

// TestSetBandwidthRefused: an unknown endpoint, a bandwidth not > 0 and a
// time before Now() are errors, not panics.
func TestSetBandwidthRefused(t *testing.T) {
	n := New()
	a := must(n.AddEndpoint(1e9, 0))
	must(n.Advance(10, nil))
	for name, err := range map[string]error{
		"unknown endpoint": n.SetBandwidth(10, a+1, 1e9),
		"zero bandwidth":   n.SetBandwidth(10, a, 0),
		"time backwards":   n.SetBandwidth(5, a, 1e9),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := n.Bandwidth(a + 1); err == nil {
		t.Error("Bandwidth of an unknown endpoint: no error")
	}
}

// TestCancelFreesBandwidth: two 1 GB transfers share a 1 GB/s sender
// (0.5 GB/s each); at 1 s each has 0.5 GB left. Cancelling one gives the
// other the whole NIC: done at 1.5 s instead of 2 s, and the cancelled
// one is never reported.
func TestCancelFreesBandwidth(t *testing.T) {
	n := New()
	a, b, c := must(n.AddEndpoint(1e9, 0)), must(n.AddEndpoint(1e9, 0)), must(n.AddEndpoint(1e9, 0))
	must(n.Start(0, a, b, 1e9, 1))
	must(n.Start(0, a, c, 1e9, 2))
	if !must(n.Cancel(1_000_000_000, 1)) {
		t.Fatal("Cancel found no transfer with tag 1")
	}
	if must(n.Cancel(1_000_000_000, 1)) {
		t.Fatal("a second Cancel of tag 1 found one")
	}
	at, ok := n.NextEvent()
	if !ok || at != 1_500_000_000 {
		t.Fatalf("next event at %d (%v), want 1.5 s", at, ok)
	}
	done := must(n.Advance(2_000_000_000, nil))
	if len(done) != 1 || done[0].Tag != 2 || done[0].At != 1_500_000_000 {
		t.Fatalf("completions %+v, want only tag 2 at 1.5 s", done)
	}
	if n.Active() != 0 || n.ActiveFlows() != 0 {
		t.Fatalf("%d transfers, %d flows left", n.Active(), n.ActiveFlows())
	}
}
