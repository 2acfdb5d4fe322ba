package calibrate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/perf"
)

func TestFileRoundTrip(t *testing.T) {
	eff := perf.Efficiency{Compute: 0.7487, Memory: 0.9174, LaunchNs: 2913, Sharpness: 2.204,
		CacheBytes: 76e6, CacheSpeed: 3.505, SamplerPasses: 1.281, SamplerNs: 9665,
		AttnCompute: 0.5432, AttnMemory: 0.8529, AttnDecodeMemory: 0.8983, AttnLaunchNs: 3302,
		AttnDecodeLaunchNs: 8779, AttnSharpness: 4, AttnTileQ: 64, AttnUnits: 172, AttnUnitNs: 3788,
		AttnEmptyNs: 257.1, AttnCacheBytes: 110.4e6, AttnCacheSpeed: 6.989,
		AttnSkew: 0.0755, AttnDecodeSkew: 0.0319,
		OpScale: map[string]float64{"act_fn": 1.125, "qk_norm": 2.653}}
	rep := &Report{Tables: map[string]Stats{"dense": {Count: 10, Median: 0.05, P90: 0.2}}}
	var buf bytes.Buffer
	if err := Write(&buf, &File{Accelerators: map[string]*Entry{"RTXPRO6000": NewEntry(eff, "x/tp1", rep)}}); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{"version: 1", "RTXPRO6000:", "compute_eff: 0.7487", "launch_us: 2.913", "tile_q: 64", "units: 172", "skew: 0.0755", "decode_skew: 0.0319", "act_fn: 1.125", "source: x/tp1"} {
		if !strings.Contains(text, want) {
			t.Errorf("file lacks %q:\n%s", want, text)
		}
	}
	f, err := Load(strings.NewReader(text), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := f.Lookup("RTXPRO6000")
	if !ok {
		t.Fatal("lookup failed")
	}
	// Units convert back exactly up to float rounding of us <-> ns.
	for _, c := range []struct {
		name string
		a, b float64
	}{
		{"launch", got.LaunchNs, eff.LaunchNs}, {"cache", got.CacheBytes, eff.CacheBytes},
		{"attn cache", got.AttnCacheBytes, eff.AttnCacheBytes}, {"empty", got.AttnEmptyNs, eff.AttnEmptyNs},
	} {
		if d := c.a/c.b - 1; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %g, want %g", c.name, c.a, c.b)
		}
	}
	got.LaunchNs, got.CacheBytes, got.AttnCacheBytes, got.AttnEmptyNs = eff.LaunchNs, eff.CacheBytes, eff.AttnCacheBytes, eff.AttnEmptyNs
	got.SamplerNs, got.AttnLaunchNs, got.AttnDecodeLaunchNs, got.AttnUnitNs = eff.SamplerNs, eff.AttnLaunchNs, eff.AttnDecodeLaunchNs, eff.AttnUnitNs
	if !reflect.DeepEqual(got, eff) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, eff)
	}
	if _, ok := f.Lookup("H100"); ok {
		t.Error("found an accelerator that is not in the file")
	}
}

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"version", "version: 2\naccelerators: {}\n", "version 2"},
		{"unknown field", "version: 1\naccelerators:\n  A:\n    compute_eff: 0.5\n    bogus: 1\n", "bogus"},
		{"bad value", "version: 1\naccelerators:\n  A:\n    compute_eff: -0.5\n", "compute"},
		{"empty entry", "version: 1\naccelerators:\n  A:\n", "no fields"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(c.text), "t.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestRound4(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0.748700817, 0.7487}, {2913.2110, 2913}, {76.004134, 76}, {0.000123456, 0.0001235}, {0, 0},
	} {
		if got := round4(c.in); got != c.want {
			t.Errorf("round4(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}
