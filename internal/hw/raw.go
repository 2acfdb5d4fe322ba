package hw

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/servesim/servesim/internal/nearest"
)

// rawFile is the YAML document: a list of accelerators.
type rawFile struct {
	Accelerators []Spec `yaml:"accelerators,omitempty" json:"accelerators,omitempty"`
}

// Spec is one accelerator as written in YAML (a catalog file, or a
// scenario's accelerators list), in spec-sheet units; see the header of
// catalog.yaml. Pointers tell "absent" (keep the base value) from zero.
type Spec struct {
	Name       string    `yaml:"name,omitempty" json:"name,omitempty"`
	Base       string    `yaml:"base,omitempty" json:"base,omitempty"`
	Aliases    []string  `yaml:"aliases,omitempty" json:"aliases,omitempty"`
	Product    string    `yaml:"product,omitempty" json:"product,omitempty"`
	Source     string    `yaml:"source,omitempty" json:"source,omitempty"`
	MemoryGB   *float64  `yaml:"memory_gb,omitempty" json:"memory_gb,omitempty"`
	MemoryGiB  *float64  `yaml:"memory_gib,omitempty" json:"memory_gib,omitempty"`
	MemBWGBps  *float64  `yaml:"mem_bw_gbps,omitempty" json:"mem_bw_gbps,omitempty"`
	TFLOPSBF16 *float64  `yaml:"tflops_bf16,omitempty" json:"tflops_bf16,omitempty"`
	TFLOPSFP8  *float64  `yaml:"tflops_fp8,omitempty" json:"tflops_fp8,omitempty"`
	TFLOPSFP4  *float64  `yaml:"tflops_fp4,omitempty" json:"tflops_fp4,omitempty"`
	CC         *float64  `yaml:"compute_capability,omitempty" json:"compute_capability,omitempty"`
	SMs        *float64  `yaml:"sms,omitempty" json:"sms,omitempty"`
	PerfDB     *string   `yaml:"perfdb_system,omitempty" json:"perfdb_system,omitempty"`
	Link       *LinkSpec `yaml:"link,omitempty" json:"link,omitempty"`
	NIC        *NICSpec  `yaml:"nic,omitempty" json:"nic,omitempty"`
	Node       *NodeSpec `yaml:"node,omitempty" json:"node,omitempty"`
	// CalibrationFrom names the calibrated accelerator whose roofline
	// efficiencies this one borrows when it has no calibration of its own
	// (default: the nearest calibrated architecture).
	CalibrationFrom *string `yaml:"calibration_from,omitempty" json:"calibration_from,omitempty"`
}

// LinkSpec is the YAML form of [Link].
type LinkSpec struct {
	Kind      *string  `yaml:"kind,omitempty" json:"kind,omitempty"`
	BWGBps    *float64 `yaml:"bw_gbps,omitempty" json:"bw_gbps,omitempty"`
	LatencyNs *float64 `yaml:"latency_ns,omitempty" json:"latency_ns,omitempty"`
	P2P       *bool    `yaml:"p2p,omitempty" json:"p2p,omitempty"`
}

// NICSpec is the YAML form of [NIC].
type NICSpec struct {
	BWGbit    *float64 `yaml:"bw_gbit,omitempty" json:"bw_gbit,omitempty"`
	LatencyNs *float64 `yaml:"latency_ns,omitempty" json:"latency_ns,omitempty"`
	HostPath  *bool    `yaml:"host_path,omitempty" json:"host_path,omitempty"`
}

// NodeSpec is the YAML form of [Node]. Integer quantities are decoded as
// floats so that 1.5 is reported rather than silently truncated.
type NodeSpec struct {
	GPUs         *float64 `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	HostMemoryGB *float64 `yaml:"host_memory_gb,omitempty" json:"host_memory_gb,omitempty"`
	HostBWGBps   *float64 `yaml:"host_bw_gbps,omitempty" json:"host_bw_gbps,omitempty"`
	NVLinkDomain *float64 `yaml:"nvlink_domain,omitempty" json:"nvlink_domain,omitempty"`
}

// decode parses data strictly: unknown fields, duplicate keys and type
// mismatches are errors with source:line:col.
func decode(data []byte, source string) (_ *rawFile, err error) {
	// goccy/go-yaml v1.19.2 panics on some malformed input (e.g. a tagged
	// empty node where a list is expected: "aliases: !x" followed by a
	// bad key; found by FuzzExtend, kept in testdata/fuzz). Bad input must
	// give an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("accelerator catalog %s: malformed YAML (decoder failure: %v)", source, r)
		}
	}()
	var f rawFile
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField())
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("accelerator catalog %s: empty document (want a top-level \"accelerators\" list)", source)
		}
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			p := ye.GetToken().Position
			msg := ye.GetMessage()
			var uf *yaml.UnknownFieldError
			if errors.As(err, &uf) {
				msg += unknownFieldHint(strings.Trim(strings.TrimPrefix(msg, "unknown field "), `"`))
			}
			return nil, fmt.Errorf("%s:%d:%d: %s", source, p.Line, p.Column, msg)
		}
		return nil, fmt.Errorf("accelerator catalog %s: %w", source, err)
	}
	if len(f.Accelerators) == 0 {
		return nil, fmt.Errorf("accelerator catalog %s: no accelerators (want a top-level \"accelerators\" list)", source)
	}
	return &f, nil
}

// position returns "source:line:col" of field in accelerators[i] (or of
// the entry itself when the field is absent), "source" if unknown.
func position(data []byte, source string, i int, field string) (pos string) {
	defer func() { // the YAML library can panic on odd input; fall back to no position
		if recover() != nil {
			pos = source
		}
	}()
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return source
	}
	for _, p := range []string{fmt.Sprintf("$.accelerators[%d].%s", i, field), fmt.Sprintf("$.accelerators[%d]", i)} {
		path, err := yaml.PathString(p)
		if err != nil {
			continue
		}
		node, err := path.FilterFile(file)
		if err != nil || node == nil {
			continue
		}
		// A mapping's own token is its first ':'; point at its first key.
		if m, ok := node.(*ast.MappingNode); ok && len(m.Values) > 0 {
			node = m.Values[0].Key
		}
		if node.GetToken() == nil {
			continue
		}
		p := node.GetToken().Position
		return fmt.Sprintf("%s:%d:%d", source, p.Line, p.Column)
	}
	return source
}

// overlay returns base with every field set in over replacing it.
func overlay(base, over Spec) Spec {
	out := base
	out.Aliases = over.Aliases
	out.Name = over.Name
	if over.Product != "" {
		out.Product = over.Product
	}
	if over.Source != "" {
		out.Source = over.Source
	}
	if over.MemoryGB != nil || over.MemoryGiB != nil {
		out.MemoryGB, out.MemoryGiB = over.MemoryGB, over.MemoryGiB
	}
	setF(&out.MemBWGBps, over.MemBWGBps)
	setF(&out.TFLOPSBF16, over.TFLOPSBF16)
	setF(&out.TFLOPSFP8, over.TFLOPSFP8)
	setF(&out.TFLOPSFP4, over.TFLOPSFP4)
	setF(&out.CC, over.CC)
	setF(&out.SMs, over.SMs)
	if over.PerfDB != nil {
		out.PerfDB = over.PerfDB
	}
	if over.CalibrationFrom != nil {
		out.CalibrationFrom = over.CalibrationFrom
	}
	if over.Link != nil {
		l := LinkSpec{}
		if out.Link != nil {
			l = *out.Link
		}
		if over.Link.Kind != nil {
			l.Kind = over.Link.Kind
		}
		setF(&l.BWGBps, over.Link.BWGBps)
		setF(&l.LatencyNs, over.Link.LatencyNs)
		if over.Link.P2P != nil {
			l.P2P = over.Link.P2P
		}
		out.Link = &l
	}
	if over.NIC != nil {
		n := NICSpec{}
		if out.NIC != nil {
			n = *out.NIC
		}
		setF(&n.BWGbit, over.NIC.BWGbit)
		setF(&n.LatencyNs, over.NIC.LatencyNs)
		if over.NIC.HostPath != nil {
			n.HostPath = over.NIC.HostPath
		}
		out.NIC = &n
	}
	if over.Node != nil {
		n := NodeSpec{}
		if out.Node != nil {
			n = *out.Node
		}
		setF(&n.GPUs, over.Node.GPUs)
		setF(&n.HostMemoryGB, over.Node.HostMemoryGB)
		setF(&n.HostBWGBps, over.Node.HostBWGBps)
		setF(&n.NVLinkDomain, over.Node.NVLinkDomain)
		out.Node = &n
	}
	return out
}

func setF(dst **float64, v *float64) {
	if v != nil {
		*dst = v
	}
}

// Unit multipliers from YAML units to SI.
const (
	gb   = 1e9           // bytes in a GB
	gib  = 1 << 30       // bytes in a GiB
	gbit = 1e9 / 8       // bytes in a gigabit
	tera = 1e12          // FLOP in a TFLOP
	maxB = float64(1e18) // largest accepted byte count or rate
)

// toAccelerator converts and validates. at gives the source position of a
// field for error messages.
func (r Spec) toAccelerator(at func(field string) string) (Accelerator, error) {
	a := Accelerator{Name: r.Name, Aliases: r.Aliases, Product: r.Product, Source: r.Source}
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: accelerator %s: %s: %s", at(field), r.Name, field, fmt.Sprintf(format, args...))
	}
	// positive converts a required positive value.
	positive := func(field string, v *float64, unit float64) (float64, error) {
		if v == nil {
			return 0, fail(field, "missing (required)")
		}
		x := *v * unit
		if math.IsNaN(*v) || *v <= 0 || x > maxB {
			return 0, fail(field, "must be > 0 and plausible, got %v", *v)
		}
		return x, nil
	}
	var err error
	switch {
	case r.MemoryGB != nil && r.MemoryGiB != nil:
		return a, fail("memory_gib", "give memory_gb or memory_gib, not both")
	case r.MemoryGiB != nil:
		m, err := positive("memory_gib", r.MemoryGiB, gib)
		if err != nil {
			return a, err
		}
		a.MemoryBytes = int64(m)
	default:
		m, err := positive("memory_gb", r.MemoryGB, gb)
		if err != nil {
			return a, err
		}
		a.MemoryBytes = int64(m)
	}
	if a.MemBandwidth, err = positive("mem_bw_gbps", r.MemBWGBps, gb); err != nil {
		return a, err
	}
	if a.PeakFLOPSBF16, err = positive("tflops_bf16", r.TFLOPSBF16, tera); err != nil {
		return a, err
	}
	if r.TFLOPSFP8 != nil && *r.TFLOPSFP8 != 0 {
		if a.PeakFLOPSFP8, err = positive("tflops_fp8", r.TFLOPSFP8, tera); err != nil {
			return a, err
		}
	}
	if r.TFLOPSFP4 != nil && *r.TFLOPSFP4 != 0 {
		if a.PeakFLOPSFP4, err = positive("tflops_fp4", r.TFLOPSFP4, tera); err != nil {
			return a, err
		}
	}

	if r.CC != nil && *r.CC != 0 {
		if !(*r.CC >= 1 && *r.CC < 20) {
			return a, fail("compute_capability", "must be a CUDA compute capability such as 9.0, got %v", *r.CC)
		}
		a.ComputeCapability = *r.CC
	}
	if r.SMs != nil && *r.SMs != 0 {
		if v := *r.SMs; !(v >= 1 && v <= 4096 && v == math.Trunc(v)) {
			return a, fail("sms", "must be the GPU's streaming multiprocessor count, a whole number in [1, 4096], got %v", v)
		}
		a.SMs = int(*r.SMs)
	}
	if r.PerfDB != nil {
		if !validSystemKey(*r.PerfDB) {
			return a, fail("perfdb_system", "must be a performance-database system folder name of lower-case letters, digits and '_' (e.g. h100_sxm), or empty; got %q", *r.PerfDB)
		}
		a.PerfDBSystem = *r.PerfDB
	}

	if r.Link == nil {
		return a, fail("link", "missing (required: kind, bw_gbps, latency_ns)")
	}
	switch {
	case r.Link.Kind == nil:
		return a, fail("link.kind", "missing (nvlink, xgmi or pcie)")
	case LinkKind(*r.Link.Kind) == LinkNVLink || LinkKind(*r.Link.Kind) == LinkXGMI || LinkKind(*r.Link.Kind) == LinkPCIe:
		a.Link.Kind = LinkKind(*r.Link.Kind)
	default:
		return a, fail("link.kind", "must be nvlink, xgmi or pcie, got %q", *r.Link.Kind)
	}
	if a.Link.Bandwidth, err = positive("link.bw_gbps", r.Link.BWGBps, gb); err != nil {
		return a, err
	}
	if a.Link.LatencyNs, err = latency("link.latency_ns", r.Link.LatencyNs, fail); err != nil {
		return a, err
	}
	a.Link.P2P = r.Link.P2P == nil || *r.Link.P2P
	if r.CalibrationFrom != nil {
		if strings.TrimSpace(*r.CalibrationFrom) == "" {
			return a, fail("calibration_from", "is empty; name a calibrated accelerator (e.g. H100) or remove the field to borrow the nearest")
		}
		a.CalibrationFrom = strings.TrimSpace(*r.CalibrationFrom)
	}

	if r.NIC == nil {
		return a, fail("nic", "missing (required: bw_gbit, latency_ns)")
	}
	if a.NIC.Bandwidth, err = positive("nic.bw_gbit", r.NIC.BWGbit, gbit); err != nil {
		return a, err
	}
	a.NIC.HostPath = r.NIC.HostPath != nil && *r.NIC.HostPath
	if a.NIC.LatencyNs, err = latency("nic.latency_ns", r.NIC.LatencyNs, fail); err != nil {
		return a, err
	}

	if r.Node == nil {
		return a, fail("node", "missing (required: gpus, host_memory_gb, host_bw_gbps)")
	}
	switch {
	case r.Node.GPUs == nil:
		return a, fail("node.gpus", "missing (required)")
	case !(*r.Node.GPUs > 0 && *r.Node.GPUs <= 1<<20):
		return a, fail("node.gpus", "must be > 0 and plausible, got %v", *r.Node.GPUs)
	case *r.Node.GPUs != math.Trunc(*r.Node.GPUs):
		return a, fail("node.gpus", "must be a whole number, got %v", *r.Node.GPUs)
	}
	a.Node.GPUs = int(*r.Node.GPUs)
	m, err := positive("node.host_memory_gb", r.Node.HostMemoryGB, gb)
	if err != nil {
		return a, err
	}
	a.Node.HostMemoryBytes = int64(m)
	if a.Node.HostBandwidth, err = positive("node.host_bw_gbps", r.Node.HostBWGBps, gb); err != nil {
		return a, err
	}
	a.Node.NVLinkDomain = a.Node.GPUs
	if d := r.Node.NVLinkDomain; d != nil {
		switch {
		case !(*d >= 1 && *d <= 1<<20) || *d != math.Trunc(*d):
			return a, fail("node.nvlink_domain", "must be a whole number of GPUs >= 1, got %v", *d)
		case int(*d) < a.Node.GPUs:
			return a, fail("node.nvlink_domain", "%v GPUs is smaller than the node (gpus: %d); give at least the node's GPU count", *d, a.Node.GPUs)
		case int(*d) > a.Node.GPUs && a.Link.Kind != LinkNVLink:
			return a, fail("node.nvlink_domain", "%v GPUs beyond the node's %d needs an NVLink link (link.kind is %s)", *d, a.Node.GPUs, a.Link.Kind)
		}
		a.Node.NVLinkDomain = int(*d)
	}
	return a, nil
}

// validSystemKey reports whether s is "" or a system folder name of the
// performance database: lower-case letters, digits and '_'.
func validSystemKey(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_') {
			return false
		}
	}
	return len(s) <= 64
}

// latency validates a required latency in ns (0 allowed).
func latency(field string, v *float64, fail func(field, format string, args ...any) error) (int64, error) {
	switch {
	case v == nil:
		return 0, fail(field, "missing (required; 0 is allowed)")
	case !(*v >= 0 && *v <= 1e15):
		return 0, fail(field, "must be >= 0 and plausible, got %v", *v)
	case *v != math.Trunc(*v):
		return 0, fail(field, "must be a whole number of ns, got %v", *v)
	}
	return int64(*v), nil
}

// unknownFieldHint is the tail of an unknown-field error: the closest
// field of an accelerator entry, or where the fields are listed.
func unknownFieldHint(field string) string {
	var names []string
	for _, t := range []reflect.Type{reflect.TypeFor[Spec](), reflect.TypeFor[LinkSpec](), reflect.TypeFor[NICSpec](), reflect.TypeFor[NodeSpec]()} {
		for f := range t.Fields() {
			if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" {
				names = append(names, tag)
			}
		}
	}
	for _, n := range names {
		if len(field) >= 3 && strings.HasPrefix(n, field) { // mem_bw for mem_bw_gbps
			return "; did you mean " + n + "?"
		}
	}
	near := nearest.Closest(names, func(c string) int { return nearest.Distance(c, field) }, 1)
	if len(near) > 0 && nearest.Distance(near[0], field) <= max(2, len(field)/3) {
		return "; did you mean " + near[0] + "?"
	}
	return " (the fields and their units: docs/accelerators.md, Your own accelerator)"
}
