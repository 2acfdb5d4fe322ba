package perf

import (
	"fmt"
	"math"
)

// Interconnect describes the GPU-to-GPU path of a tensor-parallel group as
// collectives see it.
type Interconnect struct {
	// NVLink is true when every GPU reaches every other over NVLink
	// (an NVSwitch fabric or an all-to-all NVLink mesh): vLLM's
	// "fully connected" case.
	NVLink bool
	// P2P is true when CUDA peer-to-peer works between the GPUs (vLLM's
	// P2P access check passes). Always true with NVLink.
	P2P bool
	// LinkBW is the raw per-direction link rate, bytes/s (hw.Link.Bandwidth).
	LinkBW float64
}

// Defaults of the collective model, each from public measurements (see
// docs/engine-time.md, "Tensor-parallel collectives", for the sources).
const (
	// NCCLBusEffNVLink and NCCLBusEffPCIe are the achieved all-reduce bus
	// bandwidth of large messages (nccl-tests busbw) as a fraction of the
	// raw per-direction link rate.
	NCCLBusEffNVLink = 0.80
	NCCLBusEffPCIe   = 0.75
	// NCCLLatencyNVLinkNs, NCCLLatencyP2PNs and NCCLLatencyHostNs are the
	// per-operation latency of a small NCCL all-reduce (its LL protocol)
	// over NVLink, over PCIe peer-to-peer and staged through host memory.
	NCCLLatencyNVLinkNs = 8_000
	NCCLLatencyP2PNs    = 10_000
	NCCLLatencyHostNs   = 15_000
	// CustomARLatencyNVLinkNs and CustomARLatencyPCIeNs are the
	// per-operation latency of vLLM's custom all-reduce kernel (its
	// cross-GPU flag barrier plus launch).
	CustomARLatencyNVLinkNs = 5_000
	CustomARLatencyPCIeNs   = 8_000
	// CustomARMaxBytes is vLLM's custom all-reduce buffer (max_size, 8
	// MiB): larger inputs go to NCCL.
	CustomARMaxBytes = 8 << 20
	// NCCLBusEffNet is the achieved all-reduce bus bandwidth of large
	// messages over a GPU's inter-node NIC (GPUDirect RDMA) as a fraction
	// of its line rate: the PCIe factor, as the NIC hangs off PCIe and
	// NCCL rates its network path the same way. An assumption, not a
	// measurement (docs/engine-time.md).
	NCCLBusEffNet = 0.75
)

// AllReduce times the all-reduces of one tensor-parallel group the way
// vLLM 0.19 issues them (vllm/distributed/device_communicators/
// cuda_communicator.py and custom_all_reduce.py): the custom all-reduce
// when it is enabled and the input is under CustomARMaxBytes, NCCL
// otherwise. The zero value is unusable; build it with NewAllReduce.
type AllReduce struct {
	// N is the world size (tensor-parallel degree).
	N int
	// Custom says whether vLLM's custom all-reduce is enabled.
	Custom bool
	// BusBW is the achieved NCCL bus bandwidth, bytes/s; PeerBW the
	// bandwidth at which the custom kernel reads peers' buffers.
	BusBW, PeerBW float64
	// NCCLLatencyNs and CustomLatencyNs are the per-operation latencies.
	NCCLLatencyNs, CustomLatencyNs int64
	// OneShotMax is the input size below which the custom kernel runs in
	// one stage (every rank reads every peer's whole input); above it, in
	// two (reduce-scatter then all-gather).
	OneShotMax int64
}

// NewAllReduce resolves vLLM's choice for n ranks on link:
//
//   - custom all-reduce only for n in {2, 4, 6, 8}, only with
//     peer-to-peer, and not for more than two GPUs joined only by PCIe
//     (disableCustom mirrors disable_custom_all_reduce);
//   - the custom kernel runs one-shot for every size at n = 2, below 512
//     KiB at n <= 4 and below 256 KiB above (two-shot otherwise);
//   - NCCL bus bandwidth is NCCLBusEff × the link rate with peer-to-peer,
//     half of that without (the data crosses PCIe twice through host
//     memory).
//
// Symmetric-memory all-reduce is not modelled: vLLM 0.19 enables it only on
// SM 9.0 and 10.0 devices.
func NewAllReduce(n int, link Interconnect, disableCustom bool) AllReduce {
	a := AllReduce{N: n}
	p2p := link.P2P || link.NVLink
	switch {
	case link.NVLink:
		a.BusBW = NCCLBusEffNVLink * link.LinkBW
		a.NCCLLatencyNs = NCCLLatencyNVLinkNs
		a.CustomLatencyNs = CustomARLatencyNVLinkNs
	case p2p:
		a.BusBW = NCCLBusEffPCIe * link.LinkBW
		a.NCCLLatencyNs = NCCLLatencyP2PNs
		a.CustomLatencyNs = CustomARLatencyPCIeNs
	default:
		a.BusBW = NCCLBusEffPCIe * link.LinkBW / 2
		a.NCCLLatencyNs = NCCLLatencyHostNs
	}
	a.PeerBW = a.BusBW
	worldOK := n == 2 || n == 4 || n == 6 || n == 8
	a.Custom = !disableCustom && worldOK && p2p && (link.NVLink || n == 2)
	switch {
	case n == 2:
		a.OneShotMax = CustomARMaxBytes
	case n <= 4:
		a.OneShotMax = 512 << 10
	default:
		a.OneShotMax = 256 << 10
	}
	return a
}

// CollectiveEff is an accelerator's all-reduce constants fitted on
// measured all-reduces (a calibration's allreduce section), replacing
// the defaults NewAllReduce takes from the link kind. Zero fields keep the
// defaults.
type CollectiveEff struct {
	// CustomLatencyNs and NCCLLatencyNs replace the per-operation
	// latencies of vLLM's custom all-reduce and of NCCL.
	CustomLatencyNs, NCCLLatencyNs float64
	// BusEff replaces the achieved bus bandwidth's fraction of the link
	// rate (NCCLBusEffNVLink on NVLink), for NCCL and the custom kernel.
	BusEff float64
}

// IsZero reports that no constant is set.
func (c CollectiveEff) IsZero() bool { return c == CollectiveEff{} }

// Validate checks that every constant is finite and in range.
func (c CollectiveEff) Validate() error {
	for _, f := range []struct {
		name   string
		v, max float64
	}{{"custom_latency", c.CustomLatencyNs, 1e7}, {"nccl_latency", c.NCCLLatencyNs, 1e7}, {"bus_eff", c.BusEff, 1.5}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > f.max {
			return fmt.Errorf("allreduce %s = %g: want a value in [0, %g]", f.name, f.v, f.max)
		}
	}
	return nil
}

// With returns a with the constants of c that are set, on link (the one
// a was resolved on). A group spanning nodes (NewSpanningAllReduce) is
// not adjusted: its constants are the NICs'.
func (a AllReduce) With(c CollectiveEff, link Interconnect) AllReduce {
	if c.CustomLatencyNs > 0 {
		a.CustomLatencyNs = int64(math.Round(c.CustomLatencyNs))
	}
	if c.NCCLLatencyNs > 0 {
		a.NCCLLatencyNs = int64(math.Round(c.NCCLLatencyNs))
	}
	if c.BusEff > 0 && link.LinkBW > 0 {
		a.BusBW = c.BusEff * link.LinkBW
		if !link.P2P && !link.NVLink {
			a.BusBW /= 2
		}
		a.PeerBW = a.BusBW
	}
	return a
}

// NewSpanningAllReduce is NewAllReduce for a tensor-parallel group whose n
// ranks span several nodes: intra is the GPU link inside a node, nicBW
// (bytes/s per direction) and nicLatencyNs each GPU's inter-node NIC.
//
//   - vLLM's custom all-reduce needs every rank on one node (it disables
//     itself for a group that spans nodes): NCCL only;
//   - NCCL's ring crosses the node boundary on the NICs, one ring per NIC,
//     and a ring runs at the rate of its slowest link (nccl-tests
//     doc/PERFORMANCE.md: the bus bandwidth is bounded by the slowest
//     link of the ring), so busbw = min(the intra-node busbw,
//     NCCLBusEffNet × nicBW);
//   - the small-message latency adds the NIC's to the intra-node one.
//
// NCCL's tree algorithm, which it may pick across nodes for some sizes, is
// not modelled: the ring is the bandwidth-optimal bound at large sizes.
func NewSpanningAllReduce(n int, intra Interconnect, nicBW float64, nicLatencyNs int64) AllReduce {
	a := NewAllReduce(n, intra, true)
	if net := NCCLBusEffNet * nicBW; net < a.BusBW {
		a.BusBW = net
	}
	a.PeerBW = a.BusBW
	a.NCCLLatencyNs += nicLatencyNs
	return a
}

// Ns is the time of one all-reduce of bytes on every rank.
//
//	custom one-shot: CustomLatency + (N-1) × bytes / PeerBW
//	custom two-shot: 2 × CustomLatency + 2(N-1)/N × bytes / PeerBW
//	NCCL ring:       NCCLLatency + 2(N-1)/N × bytes / BusBW
func (a AllReduce) Ns(bytes int64) int64 {
	if a.N <= 1 || bytes <= 0 {
		return 0
	}
	if !(a.BusBW > 0) {
		return math.MaxInt64
	}
	n := float64(a.N)
	b := float64(bytes)
	if a.Custom && bytes < CustomARMaxBytes {
		if bytes < a.OneShotMax {
			return clampNs(float64(a.CustomLatencyNs) + (n-1)*b/a.PeerBW*1e9)
		}
		return clampNs(2*float64(a.CustomLatencyNs) + 2*(n-1)/n*b/a.PeerBW*1e9)
	}
	return clampNs(float64(a.NCCLLatencyNs) + 2*(n-1)/n*b/a.BusBW*1e9)
}

// GatherNs is the time of an NCCL all-gather of bytes in total (every rank
// contributes bytes/N): NCCLLatency + (N-1)/N × bytes / BusBW.
func (a AllReduce) GatherNs(bytes int64) int64 {
	if a.N <= 1 || bytes <= 0 {
		return 0
	}
	if !(a.BusBW > 0) {
		return math.MaxInt64
	}
	n := float64(a.N)
	return clampNs(float64(a.NCCLLatencyNs) + (n-1)/n*float64(bytes)/a.BusBW*1e9)
}
