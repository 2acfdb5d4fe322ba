package calibrate

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
)

// BundleMeta is what a profile bundle's meta.yaml says of its
// measurement: the accelerator, the model and the dtype variant.
type BundleMeta struct {
	Hardware string `yaml:"hardware"`
	Model    string `yaml:"model"`
	Variant  string `yaml:"variant"`
}

// ReadBundleMeta reads meta.yaml at the root of a bundle folder. name
// labels errors.
func ReadBundleMeta(bundle fs.FS, name string) (BundleMeta, error) {
	var meta BundleMeta
	data, err := fs.ReadFile(bundle, "meta.yaml")
	if err != nil {
		return meta, fmt.Errorf("%s: %w; a bundle folder holds meta.yaml and tp<N>/", name, err)
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return meta, fmt.Errorf("%s/meta.yaml: %w", name, err)
	}
	if meta.Variant == "" {
		meta.Variant = "bf16"
	}
	return meta, nil
}

var tpDirRe = regexp.MustCompile(`^tp([1-9][0-9]*)$`)

// SplitTP splits a bundle reference that names one tensor-parallel table
// folder, as `servesim catalog` lists them (".../bf16/tp2"), into the
// bundle folder and the degree. A reference without a tp<N> suffix is
// returned unchanged with tp 0.
func SplitTP(ref string) (bundle string, tp int) {
	dir, last := path.Split(ref)
	m := tpDirRe.FindStringSubmatch(last)
	if m == nil || dir == "" {
		return ref, 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return ref, 0
	}
	return path.Clean(dir), n
}

// FitBundleFolder calibrates the accelerator a bundle was measured on from
// the bundle's tables at tensor-parallel degree tp: it reads meta.yaml,
// resolves the accelerator and model in the embedded catalogs and fits
// the tp<N> tables. It returns the accelerator's catalog name and the
// fitted entry, whose Source is source joined with the tp folder.
func FitBundleFolder(bundle fs.FS, source string, tp int, opt Options) (string, *Entry, *Report, error) {
	meta, err := ReadBundleMeta(bundle, source)
	if err != nil {
		return "", nil, nil, err
	}
	acc, err := hw.Lookup(meta.Hardware)
	if err != nil {
		return "", nil, nil, fmt.Errorf("%s/meta.yaml hardware: %w", source, err)
	}
	m, err := model.Load(model.Builtin(), meta.Model)
	if err != nil {
		return "", nil, nil, fmt.Errorf("%s/meta.yaml model: %w", source, err)
	}
	rm, err := ModelOf(m, meta.Variant)
	if err != nil {
		return "", nil, nil, err
	}
	rh, err := HWOf(acc, meta.Variant)
	if err != nil {
		return "", nil, nil, err
	}
	tpDir := fmt.Sprintf("tp%d", tp)
	if _, err := fs.Stat(bundle, tpDir); err != nil {
		return "", nil, nil, fmt.Errorf("%s has no %s/ tables (tp %d); pick a degree the bundle was measured at", source, tpDir, tp)
	}
	entry, rep, err := FitBundle(bundle, tpDir, rm, rh, tp, opt)
	if err != nil {
		return "", nil, nil, err
	}
	entry.Source = path.Join(source, tpDir)
	return acc.Name, entry, rep, nil
}
