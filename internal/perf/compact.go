package perf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
)

// Compact forms of a bundle's attention, skew and per-layer tables.
//
// Parsing attention.csv (tens of thousands of rows) and skew_fit.csv is most
// of a run's start-up. The parsed tables are therefore also stored, beside
// the CSVs of the embedded bundles, in a compact binary form (written by
// `go generate ./internal/assets`, see CompactTables): attention.compact
// holds the attention table's axes, stored once each, and its dense grids;
// skew_fit.compact the skew table's pc axis and alpha array;
// dense.compact and per_sequence.compact each op's samples (parsing the
// two CSVs was a fifth of the start-up once the other tables were
// compact). A compact file names the files it was made from by length and
// checksum (attention.csv; meta.yaml and skew_fit.csv; dense.csv;
// per_sequence.csv), and LoadProfile uses it only when they match: a CSV
// edited since, or a user bundle without compact files, is parsed as
// before. Decoding yields the parsed table value for value (floats are
// stored as their bits), with equal axes shared as readAttentionCSV shares
// them (TestCompactTablesMatchCSV).

// Compact file names, beside the CSV each replaces.
const (
	attnCompactName  = "attention.compact"
	skewCompactName  = "skew_fit.compact"
	denseCompactName = "dense.compact"
	seqCompactName   = "per_sequence.compact"
)

// layerTables are the per-layer tables with a compact form: CSV name,
// compact name and the CSV's key column.
var layerTables = [...]struct{ csv, compact, axis string }{
	{"dense.csv", denseCompactName, "tokens"},
	{"per_sequence.csv", seqCompactName, "sequences"},
}

// compactMagic starts every compact file; the byte after it is the kind.
const compactMagic = "servesim-compact/1\n"

const (
	kindAttn  byte = 'A'
	kindSkew  byte = 'S'
	kindLayer byte = 'L'
)

var errCompact = errors.New("malformed compact table")

// compactHeader is magic, kind and the sources' sum (sumOf).
func compactHeader(kind byte, sum [32]byte) []byte {
	b := append([]byte(compactMagic), kind)
	return append(b, sum[:]...)
}

// sumOf identifies the sources of a compact file: the length and CRC-32C
// of each part, in order (at most two parts). It detects a source edited
// since the compact file was made (a checksum, not a cryptographic hash:
// the compact files are the project's own) at a small fraction of the cost
// of parsing.
func sumOf(parts ...[]byte) [32]byte {
	var s [32]byte
	for i, p := range parts[:min(len(parts), 2)] {
		binary.LittleEndian.PutUint64(s[16*i:], uint64(len(p)))
		binary.LittleEndian.PutUint32(s[16*i+8:], crc32.Checksum(p, castagnoli))
	}
	return s
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeAttention writes a in compact form for the sources' sum.
func encodeAttention(a *attnTable, sum [32]byte) []byte {
	b := compactHeader(kindAttn, sum)
	// Axes, each stored once: equal axes share one index.
	var axes [][]float64
	axisOf := func(xs []float64) uint32 {
		for i, x := range axes {
			if slices.Equal(x, xs) {
				return uint32(i)
			}
		}
		axes = append(axes, xs)
		return uint32(len(axes) - 1)
	}
	type sliceRef struct{ kp, kvd uint32 }
	refs := make([][]sliceRef, len(a.byPC))
	for i := range a.byPC {
		for j := range a.byPC[i].slices {
			s := &a.byPC[i].slices[j]
			refs[i] = append(refs[i], sliceRef{axisOf(s.kp), axisOf(s.kvd)})
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(axes)))
	for _, xs := range axes {
		b = appendFloats(b, xs)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(a.pcs)))
	for i, pc := range a.pcs {
		e := &a.byPC[i]
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(pc))
		b = appendFloats(b, e.n)
		for j := range e.slices {
			b = binary.LittleEndian.AppendUint32(b, refs[i][j].kp)
			b = binary.LittleEndian.AppendUint32(b, refs[i][j].kvd)
			for _, t := range e.slices[j].t {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t))
			}
		}
	}
	return b
}

// decodeAttention reads a compact attention table made from sources whose
// sum is want. It reports false when b was made from other sources.
func decodeAttention(b []byte, want [32]byte) (*attnTable, bool, error) {
	r, ok := openCompact(b, kindAttn, want)
	if !ok {
		return nil, false, nil
	}
	nAxes := r.u32()
	if nAxes > uint32(len(b)) {
		return nil, false, errCompact
	}
	axes := make([][]float64, nAxes)
	guides := make([]guide, nAxes)
	for i := range axes {
		axes[i] = r.floats()
		guides[i] = newGuide(axes[i])
	}
	a := &attnTable{}
	nPC := r.u32()
	if nPC > uint32(len(b)) {
		return nil, false, errCompact
	}
	for range nPC {
		pc := r.f64()
		ns := r.floats()
		e := attnPC{n: ns, nG: newGuide(ns), slices: make([]attnSlice, len(ns))}
		for j, n := range ns {
			kp, kvd := r.u32(), r.u32()
			if kp >= nAxes || kvd >= nAxes {
				return nil, false, errCompact
			}
			s := attnSlice{kp: axes[kp], kvd: axes[kvd], kpG: guides[kp], kvdG: guides[kvd]}
			s.t = r.floatsN(len(s.kp) * len(s.kvd))
			e.slices[j] = s
			if n == 0 {
				a.pfPCs = append(a.pfPCs, pc)
				a.prefill = append(a.prefill, s)
			}
		}
		a.pcs = append(a.pcs, pc)
		a.byPC = append(a.byPC, e)
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, false, errCompact
	}
	a.pcsG, a.pfPCsG = newGuide(a.pcs), newGuide(a.pfPCs)
	return a, true, nil
}

// encodeSkew writes the fitted part of s (pc axis, alpha) in compact form.
func encodeSkew(s *skewTable, sum [32]byte) []byte {
	b := compactHeader(kindSkew, sum)
	b = appendFloats(b, s.pcs)
	return appendFloats(b, s.alpha)
}

// decodeSkew fills s (its axes built from meta.yaml) from a compact skew
// table made from sources whose sum is want; false when made from others.
func decodeSkew(s *skewTable, b []byte, want [32]byte) (bool, error) {
	r, ok := openCompact(b, kindSkew, want)
	if !ok {
		return false, nil
	}
	pcs, alpha := r.floats(), r.floats()
	if r.err != nil || len(r.b) != 0 || len(alpha) != len(pcs)*s.stride[0]*len(s.axes[0].labels) {
		return false, errCompact
	}
	s.pcs, s.pcsG, s.alpha = pcs, newGuide(pcs), alpha
	return true, nil
}

// encodeLayers writes a per-layer table (readLayerCSV's) in compact form
// for the source's sum: the ops in name order, each its name and samples.
func encodeLayers(m map[string]*pwl, sum [32]byte) []byte {
	b := compactHeader(kindLayer, sum)
	names := slices.Sorted(maps.Keys(m))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(n)))
		b = append(b, n...)
		b = appendFloats(b, m[n].xs)
		b = appendFloats(b, m[n].ys)
	}
	return b
}

// decodeLayers reads a compact per-layer table made from a source whose
// sum is want; false when made from another.
func decodeLayers(b []byte, want [32]byte) (map[string]*pwl, bool, error) {
	r, ok := openCompact(b, kindLayer, want)
	if !ok {
		return nil, false, nil
	}
	n := r.u32()
	if n > uint32(len(b)) {
		return nil, false, errCompact
	}
	out := make(map[string]*pwl, n)
	for range n {
		name := string(r.take(int(r.u32())))
		xs, ys := r.floats(), r.floats()
		if r.err != nil || len(xs) == 0 || len(xs) != len(ys) || !slices.IsSorted(xs) {
			return nil, false, errCompact
		}
		out[name] = &pwl{xs: xs, ys: ys, g: newGuide(xs)}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, false, errCompact
	}
	return out, true, nil
}

// loadLayers reads the per-layer table dir/csv (key column axis), from its
// compact form when one made from this CSV is beside it.
func loadLayers(fsys fs.FS, dir, csvName, compactName, axis string) (map[string]*pwl, error) {
	name := path.Join(dir, csvName)
	csv, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("open profile table: %w", err)
	}
	if b, err := fs.ReadFile(fsys, path.Join(dir, compactName)); err == nil {
		m, ok, err := decodeLayers(b, sumOf(csv))
		if err != nil {
			return nil, fmt.Errorf("%s: %w (delete it, or regenerate it with go generate ./internal/assets)", path.Join(dir, compactName), err)
		}
		if ok {
			return m, nil
		}
	}
	return readLayerCSV(name, bytes.NewReader(csv), axis)
}

// openCompact checks b's header: kind and sources' sum. A file of another
// version or sum is not used (ok false).
func openCompact(b []byte, kind byte, want [32]byte) (compactReader, bool) {
	h := compactHeader(kind, want)
	if !bytes.HasPrefix(b, h) {
		return compactReader{}, false
	}
	return compactReader{b: b[len(h):]}, true
}

func appendFloats(b []byte, xs []float64) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(xs)))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// compactReader reads a compact file's fields; the first short read sets
// err and every later read returns zeros.
type compactReader struct {
	b   []byte
	err error
}

func (r *compactReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errCompact
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *compactReader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *compactReader) f64() float64 {
	if p := r.take(8); p != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	}
	return 0
}

func (r *compactReader) floats() []float64 { return r.floatsN(int(r.u32())) }

func (r *compactReader) floatsN(n int) []float64 {
	p := r.take(8 * n)
	if p == nil {
		return nil
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
	}
	return xs
}

// CompactTables returns the compact forms of the attention, skew and
// per-layer tables of the bundle folder bundleDir (a tp<N> folder; its
// parent holds meta.yaml) in fsys, by file name within bundleDir:
// attention.compact when the folder has attention.csv, dense.compact and
// per_sequence.compact when it has dense.csv and per_sequence.csv,
// skew_fit.compact when it has
// skew_fit.csv and meta.yaml fits skew for its tp. `go generate
// ./internal/assets` writes them beside the embedded bundles' CSVs.
func CompactTables(fsys fs.FS, bundleDir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	csv, err := fs.ReadFile(fsys, path.Join(bundleDir, "attention.csv"))
	if err == nil {
		a, err := readAttentionCSV(path.Join(bundleDir, "attention.csv"), bytes.NewReader(csv))
		if err != nil {
			return nil, err
		}
		out[attnCompactName] = encodeAttention(a, sumOf(csv))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("compact tables: %w", err)
	}
	for _, lt := range layerTables {
		name := path.Join(bundleDir, lt.csv)
		csv, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("compact tables: %w", err)
		}
		m, err := readLayerCSV(name, bytes.NewReader(csv), lt.axis)
		if err != nil {
			return nil, err
		}
		out[lt.compact] = encodeLayers(m, sumOf(csv))
	}
	tp, ok := parseTPDir(path.Base(bundleDir))
	if !ok {
		return nil, fmt.Errorf("compact tables %s: the bundle folder must be named tp<N>", bundleDir)
	}
	metaName := path.Join(path.Dir(bundleDir), "meta.yaml")
	metaBytes, err := fs.ReadFile(fsys, metaName)
	if err != nil {
		return nil, fmt.Errorf("compact tables: %w", err)
	}
	meta, err := readMeta(fsys, metaName)
	if err != nil {
		return nil, fmt.Errorf("compact tables: %w", err)
	}
	s, err := newSkewTable(meta, tp)
	if err != nil || s == nil {
		return out, err
	}
	name := path.Join(bundleDir, "skew_fit.csv")
	csv, err = fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compact tables: %w", err)
	}
	if err := s.readSkewFitCSV(name, bytes.NewReader(csv)); err != nil {
		return nil, err
	}
	out[skewCompactName] = encodeSkew(s, sumOf(metaBytes, csv))
	return out, nil
}

// loadAttention reads dir/attention.csv, from its compact form when one
// made from this CSV is beside it.
func loadAttention(fsys fs.FS, dir string) (*attnTable, error) {
	name := path.Join(dir, "attention.csv")
	csv, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("open profile table: %w", err)
	}
	if b, err := fs.ReadFile(fsys, path.Join(dir, attnCompactName)); err == nil {
		a, ok, err := decodeAttention(b, sumOf(csv))
		if err != nil {
			return nil, fmt.Errorf("%s: %w (delete it, or regenerate it with go generate ./internal/assets)", path.Join(dir, attnCompactName), err)
		}
		if ok {
			return a, nil
		}
	}
	return readAttentionCSV(name, bytes.NewReader(csv))
}
