package perf

import (
	"bytes"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/servesim/servesim/internal/assets"
)

// bundleDirs lists the tp<N> folders of the embedded profile bundles.
func bundleDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := fs.WalkDir(assets.FS(), "profiles", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(path.Base(p), "tp") {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no bundles: %v", err)
	}
	return dirs
}

// TestCompactTablesAreCurrent: every embedded bundle's compact files are
// exactly what CompactTables makes from its CSVs now (an edited CSV
// needs go generate ./internal/assets), and there are no others.
func TestCompactTablesAreCurrent(t *testing.T) {
	fsys := assets.FS()
	for _, dir := range bundleDirs(t) {
		want, err := CompactTables(fsys, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{attnCompactName, skewCompactName, denseCompactName, seqCompactName} {
			got, err := fs.ReadFile(fsys, path.Join(dir, name))
			w, ok := want[name]
			switch {
			case !ok && err == nil:
				t.Errorf("%s/%s is not made from any table; delete it", dir, name)
			case ok && err != nil:
				t.Errorf("%s/%s is missing: run go generate ./internal/assets", dir, name)
			case ok && !bytes.Equal(got, w):
				t.Errorf("%s/%s is stale: run go generate ./internal/assets", dir, name)
			}
		}
	}
}

// TestCompactTablesMatchCSV: decoding an embedded compact file gives the
// table parsing its CSV gives, value for value (bits), with the same axes
// shared, and the same lookups.
func TestCompactTablesMatchCSV(t *testing.T) {
	fsys := assets.FS()
	for _, dir := range bundleDirs(t) {
		csv, err := fs.ReadFile(fsys, path.Join(dir, "attention.csv"))
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := readAttentionCSV("attention.csv", bytes.NewReader(csv))
		if err != nil {
			t.Fatal(err)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, attnCompactName))
		if err != nil {
			t.Fatal(err)
		}
		dec, ok, err := decodeAttention(b, sumOf(csv))
		if !ok || err != nil {
			t.Fatalf("%s: decode: ok %v, %v", dir, ok, err)
		}
		sameAttn(t, dir, parsed, dec)

		for _, lt := range layerTables {
			viaCSV, err := loadLayers(withoutCompact(fsys), dir, lt.csv, lt.compact, lt.axis)
			if err != nil {
				t.Fatal(err)
			}
			viaCompact, err := loadLayers(fsys, dir, lt.csv, lt.compact, lt.axis)
			if err != nil {
				t.Fatal(err)
			}
			if len(viaCSV) != len(viaCompact) {
				t.Fatalf("%s/%s: %d ops via CSV, %d via compact", dir, lt.csv, len(viaCSV), len(viaCompact))
			}
			for op, f := range viaCSV {
				g, ok := viaCompact[op]
				if !ok {
					t.Fatalf("%s/%s: op %s missing via compact", dir, lt.csv, op)
				}
				sameFloats(t, dir+" "+op+" xs", f.xs, g.xs)
				sameFloats(t, dir+" "+op+" ys", f.ys, g.ys)
				if f.g.shift != g.g.shift || f.g.kmin != g.g.kmin || !slices.Equal(f.g.first, g.g.first) {
					t.Fatalf("%s/%s: op %s guides differ", dir, lt.csv, op)
				}
			}
		}

		tp, _ := parseTPDir(path.Base(dir))
		meta, err := readMeta(fsys, path.Join(path.Dir(dir), "meta.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		viaCSV, err := loadSkew(withoutCompact(fsys), dir, meta, tp)
		if err != nil {
			t.Fatal(err)
		}
		viaCompact, err := loadSkew(fsys, dir, meta, tp)
		if err != nil {
			t.Fatal(err)
		}
		if (viaCSV == nil) != (viaCompact == nil) {
			t.Fatalf("%s: skew table present via CSV %v, via compact %v", dir, viaCSV != nil, viaCompact != nil)
		}
		if viaCSV != nil {
			sameFloats(t, dir+" skew pcs", viaCSV.pcs, viaCompact.pcs)
			sameFloats(t, dir+" skew alpha", viaCSV.alpha, viaCompact.alpha)
			if viaCSV.pcsG.shift != viaCompact.pcsG.shift || len(viaCSV.pcsG.first) != len(viaCompact.pcsG.first) {
				t.Errorf("%s: skew pc guides differ", dir)
			}
		}
	}
}

// sameAttn compares two attention tables bit for bit, axis sharing and
// guides included, and a grid of lookups.
func sameAttn(t *testing.T, dir string, a, b *attnTable) {
	t.Helper()
	sameFloats(t, dir+" pcs", a.pcs, b.pcs)
	sameFloats(t, dir+" pfPCs", a.pfPCs, b.pfPCs)
	if len(a.byPC) != len(b.byPC) || len(a.prefill) != len(b.prefill) {
		t.Fatalf("%s: corner counts differ", dir)
	}
	for i := range a.byPC {
		pa, pb := &a.byPC[i], &b.byPC[i]
		sameFloats(t, dir+" n", pa.n, pb.n)
		for j := range pa.slices {
			sa, sb := &pa.slices[j], &pb.slices[j]
			sameFloats(t, dir+" kp", sa.kp, sb.kp)
			sameFloats(t, dir+" kvd", sa.kvd, sb.kvd)
			sameFloats(t, dir+" t", sa.t, sb.t)
			if sa.kpG.shift != sb.kpG.shift || sa.kvdG.shift != sb.kvdG.shift {
				t.Fatalf("%s: guides differ at corner %d/%d", dir, i, j)
			}
			// Axes shared with the first corner's in one table are
			// shared in the other.
			f, g := &pa.slices[0], &pb.slices[0]
			if sameAxis(sa.kp, f.kp) != sameAxis(sb.kp, g.kp) || sameAxis(sa.kvd, f.kvd) != sameAxis(sb.kvd, g.kvd) {
				t.Fatalf("%s: axis sharing differs at corner %d/%d", dir, i, j)
			}
		}
	}
	for _, pc := range []float64{0, 1, 37, 512, 2048, 9000} {
		for _, kp := range []float64{0, 100, 3000, 40000} {
			for _, n := range []int{0, 1, 3, 17, 200} {
				for _, kvd := range []float64{1, 250, 4096, 70000} {
					x, y := a.at(pc, kp, n, kvd), b.at(pc, kp, n, kvd)
					if math.Float64bits(x) != math.Float64bits(y) {
						t.Fatalf("%s: at(%g, %g, %d, %g) = %v via CSV, %v via compact", dir, pc, kp, n, kvd, x, y)
					}
				}
			}
		}
	}
}

func sameFloats(t *testing.T, what string, a, b []float64) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, want %d", what, len(b), len(a))
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, b[i], a[i])
		}
	}
}

// withoutCompact hides the compact files of fsys.
type noCompact struct{ fs.FS }

func (n noCompact) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, ".compact") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return n.FS.Open(name)
}

func withoutCompact(fsys fs.FS) fs.FS { return noCompact{fsys} }

// TestCompactStaleOrBroken: a compact file made from another CSV is ignored
// (the CSV is parsed), and a truncated one is an error naming it.
func TestCompactStaleOrBroken(t *testing.T) {
	csv := "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n0,0,1,16,10\n0,0,1,32,12\n0,0,2,16,11\n0,0,2,32,14\n"
	edited := strings.Replace(csv, ",14\n", ",20\n", 1)
	mk := func(src string) []byte {
		a, err := readAttentionCSV("a", strings.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		return encodeAttention(a, sumOf([]byte(src)))
	}
	fsys := fstest.MapFS{
		"b/tp1/attention.csv":     {Data: []byte(edited)},
		"b/tp1/attention.compact": {Data: mk(csv)},
	}
	a, err := loadAttention(fsys, "b/tp1")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.at(0, 0, 2, 32); got != 20*usToNs {
		t.Fatalf("stale compact file used: at = %v, want %v", got, 20*usToNs)
	}
	fsys["b/tp1/attention.compact"] = &fstest.MapFile{Data: mk(edited)}
	if a, err = loadAttention(fsys, "b/tp1"); err != nil || a.at(0, 0, 2, 32) != 20*usToNs {
		t.Fatalf("current compact file: %v, %v", err, a)
	}
	full := mk(edited)
	fsys["b/tp1/attention.compact"] = &fstest.MapFile{Data: full[:len(full)-3]}
	if _, err := loadAttention(fsys, "b/tp1"); err == nil || !strings.Contains(err.Error(), "attention.compact") {
		t.Fatalf("truncated compact file: err = %v", err)
	}
}

// TestLayerCompactStaleOrBroken: the same for a per-layer table.
func TestLayerCompactStaleOrBroken(t *testing.T) {
	csv := "layer,tokens,time_us\nqkv,1,10\nqkv,64,40\nmlp,1,20\nmlp,64,80\n"
	edited := strings.Replace(csv, ",80\n", ",90\n", 1)
	mk := func(src string) []byte {
		m, err := readLayerCSV("d", strings.NewReader(src), "tokens")
		if err != nil {
			t.Fatal(err)
		}
		return encodeLayers(m, sumOf([]byte(src)))
	}
	fsys := fstest.MapFS{
		"b/tp1/dense.csv":     {Data: []byte(edited)},
		"b/tp1/dense.compact": {Data: mk(csv)},
	}
	load := func() (map[string]*pwl, error) {
		return loadLayers(fsys, "b/tp1", "dense.csv", denseCompactName, "tokens")
	}
	m, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if got := m["mlp"].at(64); got != 90*usToNs {
		t.Fatalf("stale compact file used: at = %v, want %v", got, 90*usToNs)
	}
	fsys["b/tp1/dense.compact"] = &fstest.MapFile{Data: mk(edited)}
	if m, err = load(); err != nil || m["mlp"].at(64) != 90*usToNs || m["qkv"].at(1) != 10*usToNs {
		t.Fatalf("current compact file: %v, %v", err, m)
	}
	full := mk(edited)
	fsys["b/tp1/dense.compact"] = &fstest.MapFile{Data: full[:len(full)-3]}
	if _, err := load(); err == nil || !strings.Contains(err.Error(), "dense.compact") {
		t.Fatalf("truncated compact file: err = %v", err)
	}
}
