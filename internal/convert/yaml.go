package convert

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/servesim/servesim/internal/config"
)

// The output types mirror the subset of config.Scenario a conversion sets,
// in the order a reader expects, leaving out what keeps its default.

type outScenario struct {
	Name      string       `yaml:"name"`
	Model     string       `yaml:"model"`
	Models    string       `yaml:"models,omitempty"`
	Hardware  string       `yaml:"hardware"`
	Dtype     string       `yaml:"dtype"`
	Predictor outPredictor `yaml:"predictor"`
	Instances []outGroup   `yaml:"instances"`
	Links     *outLinks    `yaml:"links,omitempty"`
	Workload  outWorkload  `yaml:"workload"`
}

type outPredictor struct {
	Kind     config.PredictorKind `yaml:"kind"`
	Profiles string               `yaml:"profiles,omitempty"`
}

type outGroup struct {
	Name     string      `yaml:"name"`
	Count    int         `yaml:"count"`
	Role     config.Role `yaml:"role"`
	Hardware string      `yaml:"hardware"`
	TP       int         `yaml:"tp"`
	PP       int         `yaml:"pp,omitempty"` // pipeline stages; omitted for 1
	DP       int         `yaml:"dp,omitempty"` // data-parallel ranks; omitted for 1
	EP       int         `yaml:"ep,omitempty"` // expert-parallel degree; omitted for 1
	MemoryGB float64     `yaml:"memory_gb"`
	Engine   *outEngine  `yaml:"engine,omitempty"`
}

type outEngine struct {
	MaxNumSeqs                int     `yaml:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens       int     `yaml:"max_num_batched_tokens,omitempty"`
	BlockSize                 int     `yaml:"block_size,omitempty"`
	GPUMemoryUtilization      float64 `yaml:"gpu_memory_utilization,omitempty"`
	ChunkedPrefill            *bool   `yaml:"enable_chunked_prefill,omitempty"`
	PrefixCaching             *bool   `yaml:"enable_prefix_caching,omitempty"`
	LongPrefillTokenThreshold int     `yaml:"long_prefill_token_threshold,omitempty"`
}

type outLinks struct {
	BandwidthGBps *float64 `yaml:"bandwidth_gbps,omitempty"`
	LatencyUs     *float64 `yaml:"latency_us,omitempty"`
}

type outWorkload struct {
	Trace string `yaml:"trace"`
}

// key identifies a group's instance type (everything but name and count).
func (g *outGroup) key() string {
	k := fmt.Sprintf("%s|%s|%d|%d|%g|%d|%d", g.Role, g.Hardware, g.TP, g.PP, g.MemoryGB, g.DP, g.EP)
	if e := g.Engine; e != nil {
		k += fmt.Sprintf("|%d|%d|%d|%g|%s|%s|%d", e.MaxNumSeqs, e.MaxNumBatchedTokens, e.BlockSize,
			e.GPUMemoryUtilization, optBool(e.ChunkedPrefill), optBool(e.PrefixCaching), e.LongPrefillTokenThreshold)
	}
	return k
}

func optBool(b *bool) string {
	if b == nil {
		return "-"
	}
	return fmt.Sprint(*b)
}

// add counts g into the group of identical instances, or appends a new
// group named after its role, hardware, tp and pp.
func (s *outScenario) add(g outGroup) {
	k := g.key()
	for i := range s.Instances {
		if s.Instances[i].key() == k {
			s.Instances[i].Count += g.Count
			return
		}
	}
	base := fmt.Sprintf("%s-%s-tp%d", g.Role, strings.ToLower(g.Hardware), g.TP)
	if g.PP > 1 {
		base += fmt.Sprintf("-pp%d", g.PP)
	}
	if g.DP > 1 {
		base += fmt.Sprintf("-dp%d-ep%d", g.DP, g.EP)
	}
	g.Name = base
	for n := 2; s.hasGroup(g.Name); n++ {
		g.Name = fmt.Sprintf("%s-%d", base, n)
	}
	s.Instances = append(s.Instances, g)
}

func (s *outScenario) hasGroup(name string) bool {
	for _, g := range s.Instances {
		if g.Name == name {
			return true
		}
	}
	return false
}

// headerWidth is the column the header comment wraps at.
const headerWidth = 88

// render writes the header comment and the scenario.
func render(s *outScenario, source string, notes []string) ([]byte, error) {
	body, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	comment(&b, "", fmt.Sprintf("servesim scenario converted by `servesim convert llmservingsim` from the LLMServingSim cluster config %s.", source))
	comment(&b, "", "Units: npu_mem.mem_size GB -> memory_gb (GB = 1e9 bytes); link_bw GiB/s -> links.bandwidth_gbps GB/s (x 1.073741824); link_latency ns -> links.latency_us.")
	comment(&b, "", "Engine-wide settings (max_num_seqs, max_num_batched_tokens, ...) are LLMServingSim command-line flags, not part of the cluster config: servesim's defaults apply unless an instance overrides them; add an engine: section to match your run.")
	if len(notes) > 0 {
		b.WriteString("#\n# Notes and approximations:\n")
		for _, n := range notes {
			comment(&b, "  - ", n)
		}
	}
	b.WriteString("\n")
	b.Write(body)
	return b.Bytes(), nil
}

// comment writes text as a wrapped YAML comment; bullet prefixes the first
// line and its width indents the rest.
func comment(b *bytes.Buffer, bullet, text string) {
	indent := strings.Repeat(" ", len(bullet))
	line := "# " + bullet
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && len(line)+1+len(w) > headerWidth {
			b.WriteString(line + "\n")
			line, empty = "# "+indent, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line + "\n")
}
