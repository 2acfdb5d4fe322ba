package assemble

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/workload"
)

// What a scenario names on disk or among the embedded assets: the model
// config, the profile bundles and the workload.

// loadModel finds the model config in the user's models directory, then
// among the embedded ones.
func loadModel(s *config.Scenario, src config.Source) (*model.Config, error) {
	if s.Models != "" {
		dir := resolve(src, s.Models)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("models: %q is not a directory; give a folder of <org>/<name>.json HuggingFace configs", dir)
		}
		m, err := model.Load(os.DirFS(dir), s.Model)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, model.ErrUnknownModel) {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	m, err := model.Load(model.Builtin(), s.Model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return m, nil
}

// profileRoot returns the file system rooted at the profile bundles.
func profileRoot(s *config.Scenario, src config.Source) (fs.FS, error) {
	if s.Predictor.Profiles == "" {
		return fs.Sub(assets.FS(), "profiles")
	}
	dir := resolve(src, s.Predictor.Profiles)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("predictor.profiles: %q is not a directory; give the root of the profile bundles (<hardware>/<org>/<model>/<dtype>/tp<N>)", dir)
	}
	return os.DirFS(dir), nil
}

func resolve(src config.Source, p string) string {
	if filepath.IsAbs(p) || src.Dir == "" {
		return p
	}
	return filepath.Join(src.Dir, p)
}

// BuiltinWorkloads lists the embedded traces usable as "builtin:NAME". The
// directory is compiled into the binary: reading it cannot fail, and a
// build without it has no builtin workloads.
func BuiltinWorkloads() []string {
	entries, err := fs.ReadDir(assets.FS(), "workloads")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// workloadOpener checks the workload reference and returns a function that
// opens a fresh source for it.
func workloadOpener(s *config.Scenario, src config.Source) (func() (workload.Source, io.Closer, error), error) {
	w := s.Workload
	wrap := func(ws workload.Source) workload.Source {
		if w.IgnoreArrivalTimes {
			ws = workload.AllDueAtZero(ws)
		}
		if w.TimeScale != 1 {
			ws = workload.Scale(ws, w.TimeScale)
		}
		if w.Limit > 0 {
			ws = workload.Take(ws, w.Limit)
		}
		return ws
	}
	if w.Chat != nil {
		chat, seed := *w.Chat, s.Seed
		return func() (workload.Source, io.Closer, error) {
			ws, err := workload.NewChat(chat, seed)
			if err != nil {
				return nil, nil, fmt.Errorf("workload.chat: %w", err)
			}
			return wrap(ws), nopCloser{}, nil
		}, nil
	}
	if w.SharedPrefix != nil {
		sp, seed := *w.SharedPrefix, s.Seed
		return func() (workload.Source, io.Closer, error) {
			ws, err := workload.NewSharedPrefix(sp, seed)
			if err != nil {
				return nil, nil, fmt.Errorf("workload.shared_prefix: %w", err)
			}
			return wrap(ws), nopCloser{}, nil
		}, nil
	}
	if w.Synthetic != nil {
		syn := *w.Synthetic
		seed := s.Seed
		return func() (workload.Source, io.Closer, error) {
			ws, err := workload.NewSynthetic(syn, seed)
			if err != nil {
				return nil, nil, fmt.Errorf("workload.synthetic: %w", err)
			}
			return wrap(ws), nopCloser{}, nil
		}, nil
	}
	open := func() (io.ReadCloser, string, error) {
		if name, ok := config.BuiltinName(w.Trace); ok {
			f, err := assets.FS().Open("workloads/" + name + ".jsonl")
			if err != nil {
				return nil, "", fmt.Errorf("workload.trace: no builtin workload %q; builtin workloads: %s", name, strings.Join(BuiltinWorkloads(), ", "))
			}
			return f, w.Trace, nil
		}
		p := resolve(src, w.Trace)
		f, err := os.Open(p)
		if err != nil {
			return nil, "", fmt.Errorf("workload.trace: %w; give a JSONL trace path (relative to the scenario file) or builtin:NAME", err)
		}
		return f, p, nil
	}
	// Open once now so a missing file is reported before the run.
	f, _, err := open()
	if err != nil {
		return nil, err
	}
	f.Close()
	return func() (workload.Source, io.Closer, error) {
		f, name, err := open()
		if err != nil {
			return nil, nil, err
		}
		switch w.Format {
		case config.TraceVLLMRequests:
			reqs, err := workload.ReadMeasured(bufio.NewReader(f), name)
			f.Close()
			if err != nil {
				return nil, nil, err
			}
			ms, err := workload.MeasuredSource(reqs, nil)
			if err != nil {
				return nil, nil, err
			}
			return wrap(ms), nopCloser{}, nil
		default:
			return wrap(workload.NewTraceReader(f, name)), f, nil
		}
	}, nil
}
