package randgen

import (
	"errors"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
)

// knownCauses lists the known defects a scenario can trigger, judged from
// its built instances and its trace alone (for the survey's triage: a
// failing case with no known cause is a new failure class).
//
//	prefill-fit   some prompt fits one prefill instance but not another
//	mixed-fit     some request's prompt fits a mixed instance but not its
//	              prompt + output
//	decode-fit    some request fits one decode instance but not another
//	headroom      prompt + reserved_decode_tokens exceeds a decode
//	              instance where prompt + output fits
//	reserve-mixed policy reserve with a mixed instance
//	reprefill     leases can expire (heartbeat off) or push drops
func knownCauses(path string) []string {
	s, src, err := config.Load(path)
	if err != nil {
		return nil
	}
	b, err := assemble.Build(s, src)
	if err != nil {
		return nil
	}
	ws, closer, err := b.Open()
	if err != nil {
		return nil
	}
	defer closer.Close()
	set := map[string]bool{}
	var engines []*engine.Engine
	hasMixed := false
	for i, in := range b.Instances() {
		e, err := engine.New(i, in.Engine, in.Predictor)
		if err != nil {
			return nil
		}
		engines = append(engines, e)
		hasMixed = hasMixed || in.Engine.Role == engine.Mixed
	}
	if s.Handoff.Policy == "reserve" && hasMixed {
		set["reserve-mixed"] = true
	}
	if !*s.Handoff.Heartbeat || (s.Handoff.Policy == "push" && s.Handoff.PushOverflow == "drop") {
		set["reprefill"] = true
	}
	for {
		ent, err := ws.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil
		}
		for i := range ent.Requests {
			r := ent.Requests[i]
			prompt := r
			prompt.OutputTokens = 1
			var pFit, pUnfit, dFit, dUnfit bool
			for _, e := range engines {
				cfg := e.Config()
				switch cfg.Role {
				case engine.Prefill:
					ok := e.Unfit(&prompt) == ""
					pFit, pUnfit = pFit || ok, pUnfit || !ok
				case engine.Mixed:
					if e.Unfit(&prompt) == "" && e.Unfit(&r) != "" {
						set["mixed-fit"] = true
					}
					ok := e.Unfit(&prompt) == ""
					pFit, pUnfit = pFit || ok, pUnfit || !ok
				case engine.Decode:
					ok := e.Unfit(&r) == ""
					dFit, dUnfit = dFit || ok, dUnfit || !ok
					need := (r.InputTokens + cfg.ReservedDecodeTokens + cfg.BlockSize - 1) / cfg.BlockSize
					if ok && need > cfg.NumBlocks {
						set["headroom"] = true
					}
				}
			}
			if pFit && pUnfit {
				set["prefill-fit"] = true
			}
			if dFit && dUnfit {
				set["decode-fit"] = true
			}
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// triage prints, for every saved case in dir, its known causes; the cases
// with none are the ones to study.
func triage(dir string) (string, error) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".yaml") {
			continue
		}
		causes := knownCauses(dir + "/" + f.Name())
		b.WriteString(f.Name() + ": " + strings.Join(causes, " ") + "\n")
	}
	return b.String(), nil
}
