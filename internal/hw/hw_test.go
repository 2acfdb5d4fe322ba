package hw

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustDefault(t *testing.T) *Catalog {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatalf("embedded catalog: %v", err)
	}
	return c
}

func TestEmbeddedCatalog(t *testing.T) {
	c := mustDefault(t)
	want := []string{"A100", "A100-40GB", "A6000", "B200", "B300", "GB200", "GB300", "H100", "H100-PCIe", "H20", "H200", "L4", "L40S",
		"MI300X", "MI325X", "RTX3090", "RTX4090", "RTX6000Ada", "RTXPRO6000"}
	if got := c.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("package Names() = %v, want %v", got, want)
	}
	for _, a := range c.All() {
		if a.MemoryBytes <= 0 || a.MemBandwidth <= 0 || a.PeakFLOPSBF16 <= 0 || a.PeakFLOPSFP8 < 0 ||
			a.Link.Bandwidth <= 0 || a.NIC.Bandwidth <= 0 || a.Node.GPUs <= 0 ||
			a.Node.HostMemoryBytes <= 0 || a.Node.HostBandwidth <= 0 {
			t.Errorf("%s: non-positive size in %+v", a.Name, a)
		}
		if a.Product == "" || a.Source == "" {
			t.Errorf("%s: missing product or source", a.Name)
		}
		if a.Link.Kind != LinkNVLink && a.Link.Kind != LinkPCIe && a.Link.Kind != LinkXGMI {
			t.Errorf("%s: link kind %q", a.Name, a.Link.Kind)
		}
		got, err := c.Lookup(a.Name)
		if err != nil || got.Name != a.Name {
			t.Errorf("Lookup(%q) = %v, %v", a.Name, got.Name, err)
		}
		for _, alias := range a.Aliases {
			if got, err := c.Lookup(alias); err != nil || got.Name != a.Name {
				t.Errorf("Lookup(alias %q) = %v, %v; want %s", alias, got.Name, err, a.Name)
			}
		}
	}
}

func TestSpecValues(t *testing.T) {
	tests := []struct {
		name             string
		memBytes         int64
		memBW, bf16, fp8 float64
		kind             LinkKind
		linkBW, nicBW    float64
		gpus             int
		hostMem          int64
		hostBW           float64
	}{
		// Per shared/data/README.md: RTX PRO 6000 96 GB, 1597 GB/s; RTX 4090 24 GB, 1008 GB/s.
		// Memory is the CUDA-visible total in GiB (94.97, 23.65, 79.22 GiB)
		// or the spec sheet's binary GB (141, 80, 48, 180 GiB).
		{"RTXPRO6000", 101_973_261_025, 1597e9, 500e12, 1000e12, LinkPCIe, 63e9, 63e9, 8, 512e9, 63e9},
		{"RTX4090", 25_393_994_137, 1008e9, 165.2e12, 330.3e12, LinkPCIe, 31.5e9, 16e9, 2, 64e9, 31.5e9},
		{"H100", 85_061_827_297, 3350e9, 989.5e12, 1979e12, LinkNVLink, 450e9, 50e9, 8, 2000e9, 63e9},
		{"H200", 141 << 30, 4800e9, 989.5e12, 1979e12, LinkNVLink, 450e9, 50e9, 8, 2000e9, 63e9},
		{"A100", 80 << 30, 2039e9, 312e12, 0, LinkNVLink, 300e9, 25e9, 8, 2000e9, 31.5e9},
		{"L40S", 48 << 30, 864e9, 362.05e12, 733e12, LinkPCIe, 31.5e9, 25e9, 8, 1000e9, 31.5e9},
		{"B200", 180 << 30, 8000e9, 2250e12, 4500e12, LinkNVLink, 900e9, 50e9, 8, 2000e9, 63e9},
		// RTX A6000 datasheet and GA102 whitepaper: 48 GB, 768 GB/s, BF16
		// (FP32 accumulate) 154.8 dense; RTX 3090: 24 GB, 936 GB/s, 71 dense.
		{"A6000", 48 << 30, 768e9, 154.8e12, 0, LinkPCIe, 31.5e9, 31.5e9, 2, 128e9, 31.5e9},
		{"RTX3090", 24 << 30, 936e9, 71e12, 0, LinkPCIe, 31.5e9, 16e9, 2, 64e9, 31.5e9},
		// AIConfigurator systems/*.yaml: nvidia-smi totals 275,040,
		// 189,471 and 284,208 MiB, given as 268.59, 185.03 and 277.55 GiB;
		// NICs 800, 400 and 800 Gb/s = 100, 50 and 100 GB/s.
		{"B300", 288_396_316_508, 7750e9, 2250e12, 4500e12, LinkNVLink, 900e9, 100e9, 8, 2000e9, 63e9},
		{"GB200", 198_674_449_694, 8000e9, 2500e12, 5000e12, LinkNVLink, 900e9, 50e9, 4, 960e9, 225e9},
		{"GB300", 298_017_043_251, 8000e9, 2500e12, 5000e12, LinkNVLink, 900e9, 100e9, 4, 960e9, 225e9},
		// The datasheet figures cited in catalog.yaml: A100 40GB 1,555 GB/s;
		// H100 PCIe 2 TB/s, 1,513/3,026 TFLOPS sparse; H20 4.0 TB/s, 148/296
		// dense; L4 300 GB/s, 242/485 sparse; RTX 6000 Ada 960 GB/s, FP8
		// 1,457 sparse; MI300X 5.3 TB/s, MI325X 6 TB/s, 1,307.4/2,614.9
		// dense, Infinity Fabric 896 GB/s bidirectional.
		{"A100-40GB", 40 << 30, 1555e9, 312e12, 0, LinkNVLink, 300e9, 25e9, 8, 1000e9, 31.5e9},
		{"H100-PCIe", 80 << 30, 2000e9, 756.5e12, 1513e12, LinkPCIe, 63e9, 50e9, 8, 1000e9, 63e9},
		{"H20", 96 << 30, 4000e9, 148e12, 296e12, LinkNVLink, 450e9, 50e9, 8, 2000e9, 63e9},
		{"L4", 24 << 30, 300e9, 121e12, 242.5e12, LinkPCIe, 31.5e9, 12.5e9, 8, 384e9, 31.5e9},
		{"RTX6000Ada", 48 << 30, 960e9, 364.25e12, 728.5e12, LinkPCIe, 31.5e9, 31.5e9, 4, 256e9, 31.5e9},
		{"MI300X", 192 << 30, 5300e9, 1307.4e12, 2614.9e12, LinkXGMI, 448e9, 50e9, 8, 2000e9, 63e9},
		{"MI325X", 256 << 30, 6000e9, 1307.4e12, 2614.9e12, LinkXGMI, 448e9, 50e9, 8, 2000e9, 63e9},
	}
	near := func(a, b float64) bool { return a == b || (b != 0 && (a-b)/b < 1e-12 && (b-a)/b < 1e-12) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Lookup(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if a.MemoryBytes != tt.memBytes || !near(a.MemBandwidth, tt.memBW) || !near(a.PeakFLOPSBF16, tt.bf16) ||
				!near(a.PeakFLOPSFP8, tt.fp8) || a.Link.Kind != tt.kind || !near(a.Link.Bandwidth, tt.linkBW) ||
				!near(a.NIC.Bandwidth, tt.nicBW) || a.Node.GPUs != tt.gpus || a.Node.HostMemoryBytes != tt.hostMem ||
				!near(a.Node.HostBandwidth, tt.hostBW) {
				t.Errorf("got %+v", a)
			}
		})
	}
}

// TestPerfDBSystemAndDomain checks the performance-database key of every
// entry (the system folders of AIConfigurator's database), the FP4 peaks
// and NVLink domains of the new Blackwell entries, and the link domain a
// tensor-parallel group can span.
func TestPerfDBSystemAndDomain(t *testing.T) {
	tests := []struct {
		name, system string
		fp4          float64
		gpus, domain int
		cc           float64
	}{
		{"H100", "h100_sxm", 0, 8, 8, 9.0},
		{"H200", "h200_sxm", 0, 8, 8, 9.0},
		{"B200", "b200_sxm", 9000e12, 8, 8, 10.0},
		{"B300", "b300_sxm", 14000e12, 8, 8, 10.3},
		{"GB200", "gb200", 10000e12, 4, 72, 10.0},
		{"GB300", "gb300", 15000e12, 4, 72, 10.3},
		{"RTXPRO6000", "rtx_pro_6000_server", 2000e12, 8, 8, 12.0},
		{"A100", "a100_sxm", 0, 8, 8, 8.0},
		{"L40S", "l40s", 0, 8, 8, 8.9},
		{"RTX4090", "", 0, 2, 2, 8.9},
		{"A6000", "", 0, 2, 2, 8.6},
		{"RTX3090", "", 0, 2, 2, 8.6},
		{"A100-40GB", "", 0, 8, 8, 8.0},
		{"H100-PCIe", "", 0, 8, 8, 9.0},
		{"H20", "", 0, 8, 8, 9.0},
		{"L4", "", 0, 8, 8, 8.9},
		{"RTX6000Ada", "", 0, 4, 4, 8.9},
		{"MI300X", "", 0, 8, 8, 0},
		{"MI325X", "", 0, 8, 8, 0},
	}
	if got, want := len(tests), len(mustDefault(t).All()); got != want {
		t.Fatalf("table covers %d accelerators, the catalog has %d", got, want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Lookup(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if a.PerfDBSystem != tt.system || a.PeakFLOPSFP4 != tt.fp4 || a.Node.GPUs != tt.gpus ||
				a.Node.NVLinkDomain != tt.domain || a.Node.LinkDomain() != tt.domain || a.ComputeCapability != tt.cc {
				t.Errorf("got system %q fp4 %g gpus %d domain %d (link %d) cc %g, want %q %g %d %d %g", a.PerfDBSystem, a.PeakFLOPSFP4,
					a.Node.GPUs, a.Node.NVLinkDomain, a.Node.LinkDomain(), a.ComputeCapability, tt.system, tt.fp4, tt.gpus, tt.domain, tt.cc)
			}
		})
	}
	// A scenario's larger node size widens the link domain.
	if got := (Node{GPUs: 16, NVLinkDomain: 8}).LinkDomain(); got != 16 {
		t.Errorf("LinkDomain of a 16-GPU node in an 8-GPU domain = %d, want 16", got)
	}
	// Overrides keep and replace the new fields.
	c, err := mustDefault(t).Extend(strings.NewReader("accelerators:\n  - name: GB200\n    node: {gpus: 8}\n  - name: H100\n    perfdb_system: h100_pcie\n"), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := c.Lookup("GB200"); g.Node.GPUs != 8 || g.Node.NVLinkDomain != 72 || g.PerfDBSystem != "gb200" {
		t.Errorf("overridden GB200 = %+v", g)
	}
	if h, _ := c.Lookup("H100"); h.PerfDBSystem != "h100_pcie" {
		t.Errorf("overridden H100 perfdb_system = %q", h.PerfDBSystem)
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		query, want, err string
	}{
		{"H100", "H100", ""},
		{"h100", "H100", ""},
		{"H100 SXM5 80GB", "H100", ""},
		{"h100_sxm", "H100", ""},
		{"rtx pro 6000", "RTXPRO6000", ""},
		{"RTX-PRO-6000-Blackwell", "RTXPRO6000", ""},
		{"geforce rtx 4090", "RTX4090", ""},
		{"a100-sxm4-80gb", "A100", ""},
		{"l40s", "L40S", ""},
		{"H10", "", `unknown accelerator "H10"; closest: H100, H20, A100 (known: A100, A100-40GB, A6000, B200, B300, GB200, GB300, H100, H100-PCIe, H20, H200, L4, L40S, MI300X, MI325X, RTX3090, RTX4090, RTX6000Ada, RTXPRO6000)`},
		{"RTX5090", "", `unknown accelerator "RTX5090"; closest: RTX3090, RTX4090,`},
		{"", "", `unknown accelerator ""; closest:`},
		{"---", "", `unknown accelerator "---"`},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			a, err := Lookup(tt.query)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Lookup(%q) error = %v, want it to contain %q", tt.query, err, tt.err)
				}
				if !errors.Is(err, ErrUnknownAccelerator) {
					t.Errorf("error does not wrap ErrUnknownAccelerator")
				}
				return
			}
			if err != nil || a.Name != tt.want {
				t.Errorf("Lookup(%q) = %q, %v; want %q", tt.query, a.Name, err, tt.want)
			}
		})
	}
	var nilCat *Catalog
	if _, err := nilCat.Lookup("H100"); err == nil || !strings.Contains(err.Error(), "the catalog is empty") {
		t.Errorf("nil catalog Lookup: %v", err)
	}
	if nilCat.Names() != nil || nilCat.All() != nil {
		t.Error("nil catalog lists entries")
	}
}

func TestLookupReturnsCopy(t *testing.T) {
	a, err := Lookup("H100")
	if err != nil {
		t.Fatal(err)
	}
	a.Aliases[0] = "mutated"
	b, _ := Lookup("H100")
	if b.Aliases[0] == "mutated" {
		t.Error("Lookup result aliases the catalog's slice")
	}
}

const complete = `
accelerators:
  - name: MyGPU
    aliases: [my gpu 1]
    product: Example GPU
    source: test
    memory_gib: 32
    mem_bw_gbps: 1000
    tflops_bf16: 100
    link: {kind: pcie, bw_gbps: 32, latency_ns: 0}
    nic: {bw_gbit: 100, latency_ns: 1500}
    node: {gpus: 4, host_memory_gb: 256, host_bw_gbps: 32}
`

func TestExtend(t *testing.T) {
	base := mustDefault(t)
	c, err := base.Extend(strings.NewReader(complete+`
  - name: H100
    memory_gb: 94
    node: {gpus: 4}
  - name: H100-NVL
    base: H100
    aliases: [H100 NVL]
    mem_bw_gbps: 3900
`), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	my, err := c.Lookup("MY-GPU-1")
	if err != nil {
		t.Fatal(err)
	}
	if my.Name != "MyGPU" || my.MemoryBytes != 32<<30 || my.PeakFLOPSFP8 != 0 || my.NIC.Bandwidth != 12.5e9 || my.Link.LatencyNs != 0 {
		t.Errorf("MyGPU = %+v", my)
	}
	h, _ := c.Lookup("h100-sxm") // override keeps name and aliases
	if h.Name != "H100" || h.MemoryBytes != 94e9 || h.Node.GPUs != 4 || h.Node.HostMemoryBytes != 2000e9 || h.MemBandwidth != 3350e9 {
		t.Errorf("overridden H100 = %+v", h)
	}
	nvl, _ := c.Lookup("h100 nvl")
	if nvl.Name != "H100-NVL" || nvl.MemoryBytes != 94e9 || nvl.MemBandwidth != 3900e9 || nvl.Node.GPUs != 4 || !slices.Equal(nvl.Aliases, []string{"H100 NVL"}) {
		t.Errorf("H100-NVL = %+v", nvl)
	}
	if got := len(c.Names()); got != len(base.Names())+2 {
		t.Errorf("extended catalog has %d names, want %d", got, len(base.Names())+2)
	}
	// The base catalog is unchanged.
	if h0, _ := base.Lookup("H100"); h0.MemoryBytes != 85_061_827_297 {
		t.Errorf("Extend modified the base catalog: %+v", h0)
	}
	if _, err := base.Lookup("MyGPU"); err == nil {
		t.Error("Extend added to the base catalog")
	}

	standalone, err := Parse(strings.NewReader(complete), "mine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := standalone.Names(); !slices.Equal(got, []string{"MyGPU"}) {
		t.Errorf("Parse Names = %v", got)
	}
}

func TestExtendErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "accelerators:\n  - name: H100\n    memry_gb: 3\n", `user.yaml:3:5: unknown field "memry_gb"`},
		{"unknown nested field", "accelerators:\n  - name: H100\n    nic: {bw_gbps: 50}\n", `user.yaml:3:11: unknown field "bw_gbps"`},
		{"unknown top field", "gpus: []\n", `user.yaml:1:1: unknown field "gpus"`},
		{"type", "accelerators:\n  - name: H100\n    memory_gb: lots\n", `user.yaml:3:16: cannot unmarshal string`},
		{"float latency", "accelerators:\n  - name: H100\n    nic: {latency_ns: 1.5}\n", `user.yaml:3:23: accelerator H100: nic.latency_ns: must be a whole number of ns, got 1.5`},
		{"float gpus", "accelerators:\n  - name: H100\n    node: {gpus: 2.5}\n", `user.yaml:3:18: accelerator H100: node.gpus: must be a whole number, got 2.5`},
		{"syntax", "accelerators: [\n", `user.yaml:`},
		{"duplicate key", "accelerators:\n  - name: H100\n    memory_gb: 1\n    memory_gb: 2\n", `user.yaml:4:5: mapping key "memory_gb" already defined`},
		{"empty", "", `accelerator catalog user.yaml: empty document`},
		{"no entries", "accelerators: []\n", `accelerator catalog user.yaml: no accelerators`},
		{"missing name", "accelerators:\n  - memory_gb: 3\n", `user.yaml:2:5: accelerators[0]: missing name`},
		{"duplicate in file", "accelerators:\n  - name: H100\n  - name: h-100\n", `user.yaml:3:11: accelerators[1]: "h-100" is already defined by accelerators[0] in this file`},
		{"negative memory", "accelerators:\n  - name: H100\n    memory_gb: -3\n", `user.yaml:3:16: accelerator H100: memory_gb: must be > 0 and plausible, got -3`},
		{"zero bandwidth", "accelerators:\n  - name: H100\n    mem_bw_gbps: 0\n", `user.yaml:3:18: accelerator H100: mem_bw_gbps: must be > 0 and plausible, got 0`},
		{"nan", "accelerators:\n  - name: H100\n    tflops_bf16: .nan\n", `accelerator H100: tflops_bf16: must be > 0 and plausible, got NaN`},
		{"inf", "accelerators:\n  - name: H100\n    mem_bw_gbps: .inf\n", `accelerator H100: mem_bw_gbps: must be > 0 and plausible, got +Inf`},
		{"huge", "accelerators:\n  - name: H100\n    memory_gb: 1e30\n", `memory_gb: must be > 0 and plausible, got 1e+30`},
		{"negative fp8", "accelerators:\n  - name: H100\n    tflops_fp8: -1\n", `accelerator H100: tflops_fp8: must be > 0 and plausible, got -1`},
		{"compute capability", "accelerators:\n  - name: H100\n    compute_capability: 90\n", `user.yaml:3:25: accelerator H100: compute_capability: must be a CUDA compute capability such as 9.0, got 90`},
		{"fractional sms", "accelerators:\n  - name: H100\n    sms: 131.5\n", `user.yaml:3:10: accelerator H100: sms: must be the GPU's streaming multiprocessor count, a whole number in [1, 4096], got 131.5`},
		{"both memories", "accelerators:\n  - name: H100\n    memory_gb: 80\n    memory_gib: 80\n", `user.yaml:4:17: accelerator H100: memory_gib: give memory_gb or memory_gib, not both`},
		{"link kind", "accelerators:\n  - name: H100\n    link: {kind: infiniband}\n", `user.yaml:3:18: accelerator H100: link.kind: must be nvlink, xgmi or pcie, got "infiniband"`},
		{"negative latency", "accelerators:\n  - name: H100\n    nic: {latency_ns: -5}\n", `accelerator H100: nic.latency_ns: must be >= 0 and plausible, got -5`},
		{"zero gpus", "accelerators:\n  - name: H100\n    node: {gpus: 0}\n", `accelerator H100: node.gpus: must be > 0 and plausible, got 0`},
		{"zero host bw", "accelerators:\n  - name: H100\n    node: {host_bw_gbps: 0}\n", `accelerator H100: node.host_bw_gbps: must be > 0 and plausible, got 0`},
		{"incomplete new", "accelerators:\n  - name: New\n    memory_gb: 3\n", `user.yaml:2:5: accelerator New: mem_bw_gbps: missing (required)`},
		{"new without memory", "accelerators:\n  - name: New\n", `user.yaml:2:5: accelerator New: memory_gb: missing (required)`},
		{"new without link", strings.Replace(complete, "    link: {kind: pcie, bw_gbps: 32, latency_ns: 0}\n", "", 1), `accelerator MyGPU: link: missing (required: kind, bw_gbps, latency_ns)`},
		{"new without link kind", strings.Replace(complete, "kind: pcie, ", "", 1), `accelerator MyGPU: link.kind: missing (nvlink, xgmi or pcie)`},
		{"new without nic latency", strings.Replace(complete, ", latency_ns: 1500", "", 1), `accelerator MyGPU: nic.latency_ns: missing (required; 0 is allowed)`},
		{"new without node", strings.Replace(complete, "    node: {gpus: 4, host_memory_gb: 256, host_bw_gbps: 32}\n", "", 1), `accelerator MyGPU: node: missing (required: gpus, host_memory_gb, host_bw_gbps)`},
		{"unknown base", "accelerators:\n  - name: H100x\n    base: H101\n", `user.yaml:3:11: accelerator H100x: base: unknown accelerator "H101"; closest: H100, A100, H20`},
		{"alias clash", "accelerators:\n  - name: H100-80\n    base: H100\n    aliases: [A100]\n", `user.yaml:4:14: accelerator H100-80: name or alias "A100" is already used by A100`},
		{"override alias clash", "accelerators:\n  - name: H100\n    aliases: [h-200]\n", `accelerator H100: name or alias "h-200" is already used by H200`},
		{"perfdb system", "accelerators:\n  - name: H100\n    perfdb_system: H100 SXM\n", `user.yaml:3:20: accelerator H100: perfdb_system: must be a performance-database system folder name`},
		{"domain below node", "accelerators:\n  - name: H100\n    node: {nvlink_domain: 4}\n", `accelerator H100: node.nvlink_domain: 4 GPUs is smaller than the node (gpus: 8)`},
		{"domain fraction", "accelerators:\n  - name: GB200\n    node: {nvlink_domain: 7.5}\n", `accelerator GB200: node.nvlink_domain: must be a whole number of GPUs >= 1, got 7.5`},
		{"domain on pcie", "accelerators:\n  - name: L40S\n    node: {nvlink_domain: 16}\n", `accelerator L40S: node.nvlink_domain: 16 GPUs beyond the node's 8 needs an NVLink link (link.kind is pcie)`},
		{"empty alias", "accelerators:\n  - name: H100\n    aliases: [\"--\"]\n", `accelerator H100: empty alias`},
	}
	base := mustDefault(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := base.Extend(strings.NewReader(tt.yaml), "user.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Extend error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gpus.yaml")
	if err := os.WriteFile(path, []byte(complete), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup("MyGPU"); err != nil {
		t.Error(err)
	}
	if _, err := c.Lookup("H100"); err != nil {
		t.Errorf("built-in entries missing: %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("accelerators:\n  - name: X\n    colour: red\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad+`:3:5: unknown field "colour"`) {
		t.Errorf("LoadFile(bad) = %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "accelerator catalog: open") {
		t.Errorf("LoadFile(missing) = %v", err)
	}
	if _, err := mustDefault(t).Extend(failingReader{}, "r"); err == nil || !strings.Contains(err.Error(), "accelerator catalog r: disk on fire") {
		t.Errorf("Extend(failing reader) = %v", err)
	}
}

func TestPeakFLOPS(t *testing.T) {
	h100, _ := Lookup("H100")
	a100, _ := Lookup("A100")
	tests := []struct {
		acc   Accelerator
		dtype string
		want  float64
		err   string
	}{
		{h100, "bfloat16", 989.5e12, ""},
		{h100, "float16", 989.5e12, ""},
		{h100, "torch.bfloat16", 989.5e12, ""},
		{h100, "fp8", 1979e12, ""},
		{h100, "fp8_e4m3", 1979e12, ""},
		{a100, "bf16", 312e12, ""},
		{a100, "fp8", 0, "accelerator A100 has no FP8 tensor cores"},
		{h100, "float32", 0, `accelerator H100: no peak FLOP/s for dtype "float32" (want bfloat16, float16, fp8 or fp4)`},
	}
	for _, tt := range tests {
		got, err := tt.acc.PeakFLOPS(tt.dtype)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s PeakFLOPS(%q) error = %v, want %q", tt.acc.Name, tt.dtype, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s PeakFLOPS(%q) = %g, %v; want %g", tt.acc.Name, tt.dtype, got, err, tt.want)
		}
	}
}

func FuzzExtend(f *testing.F) {
	f.Add(complete)
	f.Add("accelerators:\n  - name: H100\n    base: A100\n    memory_gib: 1\n")
	f.Add("accelerators: [{name: x, link: {kind: nvlink}}]")
	base, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data string) {
		c, err := base.Extend(strings.NewReader(data), "fuzz.yaml")
		if err != nil {
			return
		}
		for _, a := range c.All() {
			if a.MemoryBytes <= 0 || a.MemBandwidth <= 0 || a.Node.GPUs <= 0 {
				t.Errorf("invalid entry accepted: %+v", a)
			}
		}
	})
}

// Peer-to-peer: on for NVLink parts, off for the GeForce RTX 4090 and for
// the RTX PRO 6000 servers of the reference runs; an override can turn it on.
func TestLinkP2P(t *testing.T) {
	for name, want := range map[string]bool{"H100": true, "A100": true, "L40S": true, "A6000": true, "RTX3090": false, "RTX4090": false, "RTXPRO6000": false} {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.Link.P2P != want {
			t.Errorf("%s: P2P %v, want %v", name, a.Link.P2P, want)
		}
	}
	base, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	c, err := base.Extend(strings.NewReader("accelerators:\n  - name: RTXPRO6000\n    link: {p2p: true}\n"), "p2p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Lookup("RTXPRO6000")
	if !a.Link.P2P || a.Link.Bandwidth != 63e9 {
		t.Fatalf("override: %+v", a.Link)
	}
}

// TestPeakFLOPSFP4 checks the FP4 peaks against the datasheet figures
// (dense = half the sparse figure) and that only Blackwell parts have FP4
// tensor cores.
func TestPeakFLOPSFP4(t *testing.T) {
	for _, c := range []struct {
		name string
		fp4  float64
	}{
		{"RTXPRO6000", 2000e12}, {"B200", 9000e12},
		{"H100", 0}, {"H200", 0}, {"A100", 0}, {"L40S", 0}, {"RTX4090", 0},
	} {
		a, err := Lookup(c.name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.PeakFLOPS("nvfp4")
		switch {
		case c.fp4 == 0 && (err == nil || !strings.Contains(err.Error(), "no FP4 tensor cores")):
			t.Errorf("%s: PeakFLOPS(nvfp4) = %g, %v; want a no-FP4 error", c.name, got, err)
		case c.fp4 != 0 && (err != nil || got != c.fp4):
			t.Errorf("%s: PeakFLOPS(nvfp4) = %g, %v; want %g", c.name, got, err, c.fp4)
		}
	}
}

// The workstation cards' catalog NIC is the PCIe path inside one host; the
// datacenter parts' is a network card.
func TestNICHostPath(t *testing.T) {
	for name, want := range map[string]bool{"RTXPRO6000": true, "RTX4090": true, "H100": false, "B200": false} {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.NIC.HostPath != want {
			t.Errorf("%s: nic host_path %v, want %v", name, a.NIC.HostPath, want)
		}
	}
}

// TestUnknownFieldHint: a misspelt accelerator field gets the field it
// was probably meant to be, an unrelated one the page listing them.
func TestUnknownFieldHint(t *testing.T) {
	for field, want := range map[string]string{
		"mem_bw":            "; did you mean mem_bw_gbps?",
		"tflops_bf61":       "; did you mean tflops_bf16?",
		"memory_gi":         "; did you mean memory_gib?",
		"bandwidth":         " (the fields and their units: docs/accelerators.md, Your own accelerator)",
		"latencyns":         "; did you mean latency_ns?",
		"compute_capabilty": "; did you mean compute_capability?",
	} {
		if got := unknownFieldHint(field); got != want {
			t.Errorf("unknownFieldHint(%q) = %q, want %q", field, got, want)
		}
	}
}

// Every accelerator of the per-op database carries its SM count (the
// attention wave of its calibration), as the cited sheets give it.
func TestCatalogSMs(t *testing.T) {
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"H100": 132, "H200": 132, "A100": 108, "L40S": 142, "B200": 148, "B300": 160,
		"GB200": 152, "GB300": 160, "RTXPRO6000": 188}
	for _, a := range cat.All() {
		if w, ok := want[a.Name]; ok && a.SMs != w {
			t.Errorf("%s: sms %d, want %d", a.Name, a.SMs, w)
		}
		if a.PerfDBSystem != "" && a.SMs == 0 {
			t.Errorf("%s (%s) has no SM count", a.Name, a.PerfDBSystem)
		}
	}
}
