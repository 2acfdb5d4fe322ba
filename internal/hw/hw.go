package hw

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"github.com/servesim/servesim/internal/nearest"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

//go:generate go run ./genspecs

//go:embed catalog.yaml
var embedded []byte

// EmbeddedSource is the source name of the built-in catalog in errors.
const EmbeddedSource = "hw/catalog.yaml"

// ErrUnknownAccelerator is wrapped by the error a lookup of an unknown name
// returns.
var ErrUnknownAccelerator = errors.New("unknown accelerator")

// LinkKind is the technology of the GPU-to-GPU link inside a node.
type LinkKind string

// Link kinds.
const (
	LinkNVLink LinkKind = "nvlink"
	// LinkXGMI is AMD Infinity Fabric (xGMI): every GPU of the node linked
	// to every other.
	LinkXGMI LinkKind = "xgmi"
	LinkPCIe LinkKind = "pcie"
)

// FullyConnected reports whether every GPU of the link's domain reaches
// every other directly over it (NVLink through NVSwitch, or the xGMI mesh),
// so that collectives run on it without staging and the serving engine's
// custom all-reduce applies to any group size.
func (l Link) FullyConnected() bool { return l.Kind == LinkNVLink || l.Kind == LinkXGMI }

// Link is the GPU-to-GPU interconnect inside a node, used by tensor- and
// expert-parallel collectives.
type Link struct {
	// Kind is nvlink, xgmi or pcie.
	Kind LinkKind
	// Bandwidth is per GPU and per direction, bytes/s.
	Bandwidth float64
	// LatencyNs is the per-message latency, ns.
	LatencyNs int64
	// P2P says whether the GPUs can address each other's memory over the
	// link (CUDA peer-to-peer): always on NVLink; on PCIe it depends on the
	// card (GeForce parts have it disabled) and the platform. Without it,
	// NCCL stages traffic through host memory and vLLM's custom
	// all-reduce is unavailable. YAML "p2p", default true.
	P2P bool
}

// NIC is the path one GPU uses for KV transfers to other instances: a
// datacenter NIC (InfiniBand/RoCE), or the PCIe path between GPUs of one
// host for workstation cards.
type NIC struct {
	// Bandwidth is per direction, bytes/s.
	Bandwidth float64
	// LatencyNs is the per-transfer latency, ns.
	LatencyNs int64
	// HostPath marks a NIC entry that is really the PCIe path between
	// GPUs of one host (workstation cards without a network card per
	// GPU): nothing crosses nodes on it. YAML "host_path".
	HostPath bool
}

// Node describes the server an accelerator sits in.
type Node struct {
	// GPUs is the number of accelerators per node.
	GPUs int
	// HostMemoryBytes is the node's CPU memory, bytes.
	HostMemoryBytes int64
	// HostBandwidth is the host<->device (PCIe) bandwidth per GPU and per
	// direction, bytes/s.
	HostBandwidth float64
	// NVLinkDomain is the number of GPUs that reach each other over the
	// intra-node Link (an NVLink Switch domain), at least GPUs: 72 for a
	// GB200 or GB300 NVL72 rack of 4-GPU compute trays, GPUs elsewhere. A
	// tensor-parallel group inside it runs its collectives on the Link,
	// not the NIC. YAML "nvlink_domain", default gpus.
	NVLinkDomain int
}

// LinkDomain is the number of GPUs a tensor-parallel group can span with
// its collectives on the intra-node link: the larger of NVLinkDomain and
// GPUs (a scenario may override GPUs).
func (n Node) LinkDomain() int { return max(n.GPUs, n.NVLinkDomain) }

// Accelerator is one catalog entry, in SI units.
type Accelerator struct {
	// Name is the canonical catalog name, e.g. "H100".
	Name string
	// Aliases are other accepted names.
	Aliases []string
	// Product is the full product name.
	Product string
	// Source cites the spec sheet the numbers come from.
	Source string
	// MemoryBytes is the device memory capacity, bytes.
	MemoryBytes int64
	// MemBandwidth is the device memory bandwidth, bytes/s.
	MemBandwidth float64
	// PeakFLOPSBF16 is the peak dense BF16 tensor throughput, FLOP/s.
	PeakFLOPSBF16 float64
	// PeakFLOPSFP8 is the peak dense FP8 tensor throughput, FLOP/s; 0 when
	// the accelerator has no FP8 tensor cores.
	PeakFLOPSFP8 float64
	// PeakFLOPSFP4 is the peak dense FP4 (NVFP4) tensor throughput,
	// FLOP/s; 0 when the accelerator has no FP4 tensor cores (before
	// Blackwell).
	PeakFLOPSFP4 float64
	// ComputeCapability is the CUDA compute capability (9.0 for Hopper);
	// 0 when unknown. The serving engine picks its kernels by it (vLLM
	// runs FlashAttention 3 on 9.x, FlashAttention 2 elsewhere).
	ComputeCapability float64
	// SMs is the number of streaming multiprocessors (CUDA's
	// multiProcessorCount), the width of one wave of a kernel running a
	// CTA per SM; 0 when unknown. YAML "sms".
	SMs int
	// PerfDBSystem is the accelerator's system folder in NVIDIA
	// AIConfigurator's per-op performance database (e.g. h100_sxm), ""
	// when the database has none. YAML "perfdb_system".
	PerfDBSystem string
	// Link is the intra-node GPU-to-GPU link.
	Link Link
	// NIC is the inter-instance KV transfer path.
	NIC NIC
	// Node is the server the accelerator sits in.
	Node Node
	// CalibrationFrom names the calibrated accelerator whose roofline
	// efficiencies this one borrows when it has none of its own; "" lets
	// the run pick the nearest calibrated architecture. YAML
	// "calibration_from".
	CalibrationFrom string
}

// PeakFLOPS returns the peak dense tensor throughput for computing in dtype:
// bfloat16/bf16 and float16/fp16/half use the BF16 rate, fp8 variants the
// FP8 rate, fp4/nvfp4 the FP4 rate. It fails for other dtypes and for a
// format the part has no tensor cores for.
func (a Accelerator) PeakFLOPS(dtype string) (float64, error) {
	d := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(dtype)), "torch.")
	switch {
	case d == "bfloat16" || d == "bf16" || d == "float16" || d == "fp16" || d == "half":
		return a.PeakFLOPSBF16, nil
	case d == "fp8" || d == "float8" || strings.HasPrefix(d, "fp8_") || strings.HasPrefix(d, "float8_"):
		if a.PeakFLOPSFP8 <= 0 {
			return 0, fmt.Errorf("accelerator %s has no FP8 tensor cores", a.Name)
		}
		return a.PeakFLOPSFP8, nil
	case d == "fp4" || d == "nvfp4":
		if a.PeakFLOPSFP4 <= 0 {
			return 0, fmt.Errorf("accelerator %s has no FP4 tensor cores", a.Name)
		}
		return a.PeakFLOPSFP4, nil
	}
	return 0, fmt.Errorf("accelerator %s: no peak FLOP/s for dtype %q (want bfloat16, float16, fp8 or fp4)", a.Name, dtype)
}

// Catalog is an immutable set of accelerators. Its methods are safe for
// concurrent use.
type Catalog struct {
	entries []entry        // in definition order
	index   map[string]int // normalized name or alias -> entries index
}

// entry keeps the raw YAML values next to the converted ones so an
// override can change single fields.
type entry struct {
	raw Spec
	acc Accelerator
}

var defaultCatalog = sync.OnceValues(func() (*Catalog, error) {
	if len(embedded) == specsLen && crc32Sum(embedded) == specsSum {
		// The entries the file decodes to, generated from it (gosource.go).
		return (&Catalog{}).With(embeddedSpecs, func(i int, field string) string {
			return position(embedded, EmbeddedSource, i, field)
		})
	}
	return Parse(bytes.NewReader(embedded), EmbeddedSource)
})

// Default returns the built-in catalog, made on first use from the
// embedded catalog.yaml's entries as Go values (specs_gen.go), or by
// parsing the file when they are stale. The error is non-nil only if the
// embedded file is broken, which the package tests rule out.
func Default() (*Catalog, error) { return defaultCatalog() }

// Lookup finds name in the built-in catalog; see [Catalog.Lookup].
func Lookup(name string) (Accelerator, error) {
	c, err := Default()
	if err != nil {
		return Accelerator{}, err
	}
	return c.Lookup(name)
}

// Names lists the built-in accelerators; see [Catalog.Names].
func Names() []string {
	c, err := Default()
	if err != nil {
		return nil
	}
	return c.Names()
}

// LoadFile returns the built-in catalog extended with the YAML file at
// path; see [Catalog.Extend].
func LoadFile(path string) (*Catalog, error) {
	base, err := Default()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("accelerator catalog: %w", err)
	}
	defer f.Close()
	return base.Extend(f, path)
}

// Parse reads a catalog YAML on its own, without the built-in entries.
// source names the data in errors.
func Parse(r io.Reader, source string) (*Catalog, error) {
	return (&Catalog{}).Extend(r, source)
}

// Extend returns a new catalog: c plus the entries of the YAML read from r
// (same shape as the embedded catalog.yaml). An entry whose name or alias
// matches an existing accelerator overrides the fields it gives; an entry
// with "base: NAME" starts from a copy of NAME; any other entry must be
// complete. c is not modified. source names the data in errors, which carry
// line:column positions.
func (c *Catalog) Extend(r io.Reader, source string) (*Catalog, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("accelerator catalog %s: %w", source, err)
	}
	f, err := decode(data, source)
	if err != nil {
		return nil, err
	}
	return c.With(f.Accelerators, func(i int, field string) string { return position(data, source, i, field) })
}

// With returns a new catalog: c plus specs, merged as [Catalog.Extend]
// merges a file's entries. at(i, field) names where field of specs[i] is
// written (a file position, or a field path such as
// "accelerators[0].mem_bw_gbps"); every error starts with it.
func (c *Catalog) With(specs []Spec, at func(i int, field string) string) (*Catalog, error) {
	out := c.clone()
	seen := map[string]int{} // normalized name -> index in specs
	for i, ra := range specs {
		at := func(field string) string { return at(i, field) }
		key := normalize(ra.Name)
		if key == "" {
			return nil, fmt.Errorf("%s: accelerators[%d]: missing name", at("name"), i)
		}
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s: accelerators[%d]: %q is already defined by accelerators[%d] in this file", at("name"), i, ra.Name, j)
		}
		seen[key] = i
		if err := out.add(ra, at); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// add merges one raw entry into c.
func (c *Catalog) add(ra Spec, at func(field string) string) error {
	merged := ra
	existing, exists := c.index[normalize(ra.Name)]
	switch {
	case ra.Base != "":
		bi, ok := c.index[normalize(ra.Base)]
		if !ok {
			return fmt.Errorf("%s: accelerator %s: base: %w %q%s", at("base"), ra.Name, ErrUnknownAccelerator, ra.Base, c.suggest(ra.Base))
		}
		merged = overlay(c.entries[bi].raw, ra)
		merged.Aliases = slices.Clone(ra.Aliases) // the base keeps its own aliases
	case exists:
		merged = overlay(c.entries[existing].raw, ra)
		merged.Name = c.entries[existing].raw.Name // an override keeps the canonical name
		if ra.Aliases == nil {
			merged.Aliases = slices.Clone(c.entries[existing].raw.Aliases)
		}
	}
	merged.Base = ""
	acc, err := merged.toAccelerator(at)
	if err != nil {
		return err
	}
	// Names and aliases must stay unambiguous (the index holds every
	// other entry's, normalized).
	names := append([]string{acc.Name}, acc.Aliases...)
	keys := make([]string, len(names))
	for i, n := range names {
		k := normalize(n)
		if k == "" {
			return fmt.Errorf("%s: accelerator %s: empty alias", at("aliases"), acc.Name)
		}
		if j, used := c.index[k]; used && !(exists && j == existing) {
			return fmt.Errorf("%s: accelerator %s: name or alias %q is already used by %s", at("aliases"), acc.Name, n, c.entries[j].acc.Name)
		}
		keys[i] = k
	}
	e := entry{raw: merged, acc: acc}
	if exists {
		c.entries[existing] = e
		c.reindex() // its old aliases go
		return nil
	}
	c.entries = append(c.entries, e)
	for _, k := range keys {
		c.index[k] = len(c.entries) - 1
	}
	return nil
}

func (c *Catalog) clone() *Catalog {
	out := &Catalog{entries: slices.Clone(c.entries)}
	out.reindex()
	return out
}

// reindex rebuilds the name index (add keeps names and aliases unique).
func (c *Catalog) reindex() {
	c.index = make(map[string]int, 4*len(c.entries))
	for i, e := range c.entries {
		for _, n := range append([]string{e.acc.Name}, e.acc.Aliases...) {
			c.index[normalize(n)] = i
		}
	}
}

// Lookup returns the accelerator called name, matched case-insensitively
// and ignoring spaces and punctuation against names and aliases. An unknown
// name yields an error wrapping [ErrUnknownAccelerator] that lists the
// nearest names.
func (c *Catalog) Lookup(name string) (Accelerator, error) {
	if c != nil {
		if i, ok := c.index[normalize(name)]; ok && normalize(name) != "" {
			return c.entries[i].acc.clone(), nil
		}
	}
	return Accelerator{}, fmt.Errorf("%w %q%s", ErrUnknownAccelerator, name, c.suggest(name))
}

// Names returns the canonical names, sorted case-insensitively.
func (c *Catalog) Names() []string {
	if c == nil {
		return nil
	}
	names := make([]string, len(c.entries))
	for i, e := range c.entries {
		names[i] = e.acc.Name
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return names
}

// All returns every accelerator in definition order.
func (c *Catalog) All() []Accelerator {
	if c == nil {
		return nil
	}
	out := make([]Accelerator, len(c.entries))
	for i, e := range c.entries {
		out[i] = e.acc.clone()
	}
	return out
}

func (a Accelerator) clone() Accelerator {
	a.Aliases = slices.Clone(a.Aliases)
	return a
}

// maxSuggestions bounds the "closest" list of an unknown-name error.
const maxSuggestions = 3

// suggest is the tail of an unknown-name error.
func (c *Catalog) suggest(name string) string {
	names := c.Names()
	if len(names) == 0 {
		return "; the catalog is empty"
	}
	return fmt.Sprintf("; closest: %s (known: %s); another GPU is described by its memory, bandwidth and FLOP/s in an accelerators: section or file (docs/accelerators.md, Your own accelerator)", strings.Join(closest(c, name), ", "), strings.Join(names, ", "))
}

// closest returns the canonical names nearest to name by edit distance over
// normalized names and aliases.
func closest(c *Catalog, name string) []string {
	want := normalize(name)
	aliases := map[string][]string{}
	var names []string
	for _, e := range c.entries {
		names = append(names, e.acc.Name)
		aliases[e.acc.Name] = append([]string{e.acc.Name}, e.acc.Aliases...)
	}
	return nearest.Closest(names, func(n string) int {
		d := -1
		for _, a := range aliases[n] {
			if dn := nearest.Distance(normalize(a), want); d < 0 || dn < d {
				d = dn
			}
		}
		return d
	}, maxSuggestions)
}

// normalize folds case and drops everything but letters and digits, so
// "RTX PRO 6000", "rtx-pro-6000" and "RTXPRO6000" are one name.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127 {
			b.WriteRune(r)
		}
	}
	return b.String()
}
