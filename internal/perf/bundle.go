package perf

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// ErrNoProfile is wrapped by every FindBundle error that reports a missing
// hardware, model, dtype or tensor-parallel degree.
var ErrNoProfile = errors.New("profile bundle not found")

type noProfileError struct{ msg string }

func (e *noProfileError) Error() string { return e.msg }
func (e *noProfileError) Unwrap() error { return ErrNoProfile }

const profilesHint = "use --profiles ROOT to point at a bundle root that has it"

// FindBundle locates the tables for one deployment in a profile root laid
// out as <hardware>/<org>/<name>/<dtype>/tp<N>/ (model is "org/name"; the
// dtype folder holds meta.yaml). fsys is rooted at the profile root: for the
// embedded data, fs.Sub(assets.FS(), "profiles"). It returns the slash path
// of the tp<N> folder, to pass to LoadProfile. When something is missing the
// error (wrapping ErrNoProfile) lists what the root does have.
func FindBundle(fsys fs.FS, hardware, model, dtype string, tp int) (string, error) {
	if tp < 1 {
		return "", fmt.Errorf("find profile: tensor-parallel degree must be >= 1, got %d", tp)
	}
	for _, s := range []struct{ what, v string }{{"hardware", hardware}, {"model", model}, {"dtype", dtype}} {
		if s.v == "" || !fs.ValidPath(s.v) || strings.Contains(s.v, "\\") {
			return "", fmt.Errorf("find profile: invalid %s %q", s.what, s.v)
		}
	}
	if strings.Contains(hardware, "/") || strings.Contains(dtype, "/") {
		return "", fmt.Errorf("find profile: hardware %q and dtype %q must not contain '/'", hardware, dtype)
	}
	if !isDir(fsys, hardware) {
		var hw []string
		dirs := subdirs(fsys, ".")
		for _, d := range dirs {
			if len(modelsOn(fsys, d)) > 0 {
				hw = append(hw, d)
			}
		}
		return "", &noProfileError{fmt.Sprintf("no profiles for hardware %s: available hardware: %s; %s",
			hardware, list(hw), profilesHint)}
	}
	modelDir := path.Join(hardware, model)
	if !isDir(fsys, modelDir) {
		return "", &noProfileError{fmt.Sprintf("no profile for %s on %s: available models: %s; %s",
			model, hardware, list(modelsOn(fsys, hardware)), profilesHint)}
	}
	dtypeDir := path.Join(modelDir, dtype)
	if !isDir(fsys, dtypeDir) {
		dts := subdirs(fsys, modelDir)
		return "", &noProfileError{fmt.Sprintf("no %s profile of %s on %s: available dtypes: %s; %s",
			dtype, model, hardware, list(dts), profilesHint)}
	}
	dir := path.Join(dtypeDir, "tp"+strconv.Itoa(tp))
	if !isDir(fsys, dir) {
		var tps []string
		ents := subdirs(fsys, dtypeDir)
		var nums []int
		for _, e := range ents {
			if n, ok := parseTPDir(e); ok {
				nums = append(nums, n)
			}
		}
		sort.Ints(nums)
		for _, n := range nums {
			tps = append(tps, strconv.Itoa(n))
		}
		return "", &noProfileError{fmt.Sprintf("no profile for tp=%d of %s on %s (%s): available tp: %s; %s",
			tp, model, hardware, dtype, list(tps), profilesHint)}
	}
	return dir, nil
}

// parseTPDir parses a "tp<N>" folder name.
func parseTPDir(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "tp")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

func isDir(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && st.IsDir()
}

// subdirs lists dir's subfolders, leaving out hidden ones. An unreadable
// dir has none: the lists only name the alternatives in an error message.
func subdirs(fsys fs.FS, dir string) []string {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil // unreadable: nothing to offer (callers only list alternatives)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// modelsOn lists "org/name" model folders under a hardware folder (a model
// folder is one holding at least one dtype folder with a meta.yaml; a
// top-level folder holding a meta.yaml one level down is an org-less model).
func modelsOn(fsys fs.FS, hardware string) []string {
	var out []string
	orgs := subdirs(fsys, hardware)
	for _, org := range orgs {
		if hasBundle(fsys, path.Join(hardware, org)) {
			out = append(out, org)
			continue
		}
		names := subdirs(fsys, path.Join(hardware, org))
		for _, n := range names {
			if hasBundle(fsys, path.Join(hardware, org, n)) {
				out = append(out, org+"/"+n)
			}
		}
	}
	sort.Strings(out)
	return out
}

func hasBundle(fsys fs.FS, modelDir string) bool {
	dts := subdirs(fsys, modelDir)
	for _, d := range dts {
		if _, err := fs.Stat(fsys, path.Join(modelDir, d, "meta.yaml")); err == nil {
			return true
		}
	}
	return false
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
