package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// synthetic returns a run of n requests over four instances: request i
// arrives at i ms and has deterministic latencies; every 50th is rejected
// and every 70th fails. Instances are sampled each second for secs s.
func synthetic(name string, n, secs int, slow int64) Run {
	c := NewCollector()
	sum := metrics.NewSummary()
	for i := range n {
		r := metrics.NewRecord(int64(i), int64(i)*1e6)
		r.InputTokens, r.OutputTokens = 100+i%900, 10+i%90
		switch {
		case i%50 == 49:
			r.Outcome, r.Reason = metrics.Rejected, "admission: queue full"
		case i%70 == 69:
			r.Outcome, r.Reason = metrics.Failed, fmt.Sprintf("prompt of %d tokens exceeds KV capacity", 1000+i%3)
		default:
			r.Outcome = metrics.Finished
			r.Generated = r.OutputTokens
			r.Scheduled = r.Arrival + int64(i%997)*1e5
			r.FirstToken = r.Scheduled + slow*int64(1+i%13)*1e6
			r.LastToken = r.FirstToken + int64(r.Generated-1)*int64(15+i%7)*1e6
		}
		c.Record(&r)
		sum.Add(&r)
	}
	for s := 1; s <= secs; s++ {
		for inst := range 4 {
			c.Sample(int64(s)*1e9, inst, metrics.Snapshot{
				Running: (s + inst*7) % 40, Waiting: (s / (inst + 1)) % 25, HandoffQueue: s % 5 * inst,
				KVUsedBlocks: 1000 + (s*13+inst)%3000, KVPinnedBlocks: s % 400, KVCachedBlocks: 200 + s%100,
				KVTotalBlocks: 4000, LinkUtil: float64(s%10) / 10,
			})
		}
	}
	res := sum.Finish(int64(secs) * 1e9)
	return Run{Name: name, Summary: res, Data: c, Instances: []InstanceInfo{
		{0, "prefill", "prefill"}, {1, "prefill", "prefill"}, {2, "decode", "decode"}, {3, "decode", "decode"},
	}}
}

func write(t *testing.T, title string, runs ...Run) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, title, runs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// voidRE matches the start tag of an HTML element without an end tag.
var voidRE = regexp.MustCompile(`<(meta|br|img|hr|input|link)\b([^>]*?)/?>`)

// checkHTML checks that page is well-formed: a doctype, then html with
// head (with a title) and body, every element closed in order (void
// elements excepted), and nothing that loads a resource or runs a script.
func checkHTML(t *testing.T, page []byte) {
	t.Helper()
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>\n")) {
		t.Fatalf("page does not start with <!DOCTYPE html>")
	}
	// Parse as strict XML with HTML entities, void elements self-closed:
	// stricter than HTML (attributes must be quoted, every element closed).
	xmlish := voidRE.ReplaceAll(page, []byte("<$1$2/>"))
	d := xml.NewDecoder(bytes.NewReader(xmlish))
	d.Entity = xml.HTMLEntity
	var stack []string
	seen := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("HTML does not parse: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			seen[e.Name.Local]++
			for _, a := range e.Attr {
				if a.Name.Local == "src" || a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#") {
					t.Errorf("<%s %s=%q> refers to a resource", e.Name.Local, a.Name.Local, a.Value)
				}
			}
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != e.Name.Local {
				t.Fatalf("</%s> closes %v (line %d)", e.Name.Local, stack, lineOf(d, xmlish))
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements: %v", stack)
	}
	for _, el := range []string{"html", "head", "title", "body"} {
		if seen[el] != 1 {
			t.Errorf("<%s> appears %d times, want once", el, seen[el])
		}
	}
	for _, bad := range []string{"script", "link", "iframe", "img", "object", "embed", "image"} {
		if seen[bad] > 0 {
			t.Errorf("page has <%s>", bad)
		}
	}
	if bytes.Contains(page, []byte("url(")) || bytes.Contains(page, []byte("@import")) {
		t.Errorf("page CSS loads a resource")
	}
}

func lineOf(d *xml.Decoder, page []byte) int {
	return bytes.Count(page[:d.InputOffset()], []byte("\n")) + 1
}

var svgRE = regexp.MustCompile(`(?s)<svg class="chart" role="img" aria-label="([^"]*)"(.*?)</svg>`)

// charts returns the label and body of every chart of page, checking that
// each is an SVG that draws something and writes text.
func charts(t *testing.T, page []byte) []string {
	t.Helper()
	var labels []string
	for _, m := range svgRE.FindAllSubmatch(page, -1) {
		label, body := string(m[1]), m[2]
		labels = append(labels, label)
		if !bytes.Contains(body, []byte("<path")) || !bytes.Contains(body, []byte("<text")) {
			t.Errorf("chart %q has no path or no text", label)
		}
		if !bytes.Contains(body, []byte(`viewBox="0 0 540 270"`)) {
			t.Errorf("chart %q lacks its viewBox", label)
		}
	}
	if n := bytes.Count(page, []byte("<svg")); n != len(labels) {
		t.Errorf("%d <svg> elements, %d charts", n, len(labels))
	}
	return labels
}

func TestWriteOneRun(t *testing.T) {
	r := synthetic("pd-test", 5000, 4500, 100)
	r.Summary.Simulated = []string{"Model: meta-llama/Llama-3.1-8B (bf16)",
		"  step latency: roofline, A6000 calibrated (embedded calibration); PyTorch-derived: <eager>"}
	page := write(t, "servesim run: pd-test", r)
	checkHTML(t, page)
	got := charts(t, page)
	want := []string{"Request outcomes", "TTFT CDF", "TPOT CDF", "E2E CDF", "Running", "Waiting",
		"Handoff queue", "KV used", "KV pinned (held for handoff)", "KV cached (prefix-cache blocks)", "KV link utilisation"}
	if len(got) != len(want) {
		t.Fatalf("charts %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("chart %d is %q, want %q", i, got[i], want[i])
		}
	}
	s := string(page)
	for _, w := range []string{
		"<title>servesim run: pd-test</title>",
		"<td>Requests total</td><td>5000</td>",
		"rejected: admission: queue full", "failed: prompt of N tokens exceeds KV capacity (e.g. prompt of 1000 tokens exceeds KV capacity)",
		"#2 decode", "mean of 4 consecutive samples", // 4500 samples -> width 4 (1125 points)
		"<td>TTFT (engine)</td><td>" + fmt.Sprint(r.Summary.TTFT.Count) + "</td>",
		// What was simulated, as the text summary's header says it.
		"<pre class=\"setup\">Model: meta-llama/Llama-3.1-8B (bf16)\n  step latency: roofline, A6000 calibrated (embedded calibration); PyTorch-derived: &lt;eager&gt;\n</pre>",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if strings.Contains(s, "<details") {
		t.Errorf("a single run has no collapsible sections")
	}
}

func TestWriteCompare(t *testing.T) {
	runs := []Run{synthetic("pull", 3000, 300, 100), synthetic("reserve", 3000, 300, 40), {Name: "eager", Summary: metrics.Result{Stopped: "eager handoff stopped the run at t=4.469 s"}}}
	page := write(t, "Handoff policies on test", runs...)
	checkHTML(t, page)
	got := charts(t, page)
	if want := 1 + 3 + 7*len(runs); len(got) != want {
		t.Fatalf("%d charts, want %d: %q", len(got), want, got)
	}
	s := string(page)
	// Overlaid CDFs: each CDF chart has a legend entry per run with data.
	for _, m := range svgRE.FindAllStringSubmatch(s, 4)[1:] {
		for _, name := range []string{">pull</text>", ">reserve</text>"} {
			if !strings.Contains(m[2], name) {
				t.Errorf("chart %q has no legend entry %s", m[1], name)
			}
		}
	}
	for _, w := range []string{
		"<th>pull</th><th>reserve</th><th>eager</th>",
		"<b>eager stopped:</b> eager handoff stopped the run at t=4.469 s",
		"<details open=\"open\">\n<summary>pull</summary>", "<details>\n<summary>reserve</summary>",
		"no samples",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

// TestDeterministic: the same inputs give the same bytes, also from a
// collector rebuilt from scratch.
func TestDeterministic(t *testing.T) {
	a := write(t, "t", synthetic("a", 2000, 2500, 100), synthetic("b", 2000, 2500, 50))
	b := write(t, "t", synthetic("a", 2000, 2500, 100), synthetic("b", 2000, 2500, 50))
	if !bytes.Equal(a, b) {
		t.Fatal("two reports of the same runs differ")
	}
	c := write(t, "t", synthetic("a", 2000, 2500, 100), synthetic("b", 2000, 2500, 51))
	if bytes.Equal(a, c) {
		t.Fatal("reports of different runs are equal")
	}
}

// TestBoundedMemory: a million records and a million seconds of four
// instances fit in a few MB, and the series keep at most MaxPoints points.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("feeds 1e6 records")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := NewCollector()
	r := metrics.NewRecord(0, 0)
	r.Outcome, r.Generated = metrics.Finished, 50
	const n = 1_000_000
	for i := range n {
		r.ID, r.Arrival = int64(i), int64(i)*1e6
		r.FirstToken = r.Arrival + int64(i%100_003)*1e5 // up to 10 s, 100k distinct values
		r.LastToken = r.FirstToken + int64(49*(10+i%40))*1e6
		c.Record(&r)
	}
	for s := int64(1); s <= n; s++ {
		for inst := range 4 {
			c.Sample(s*1e9, inst, metrics.Snapshot{Running: int(s % 100), KVTotalBlocks: 100})
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("collector of %d records and %d samples: heap grew %.2f MB", n, 4*n, float64(grown)/1e6)
	if grown > 8<<20 {
		t.Errorf("heap grew %d bytes, want under 8 MiB", grown)
	}
	for _, s := range c.instances() {
		var samples int64
		for _, b := range s.buckets {
			samples += b.n
		}
		if len(s.buckets) > MaxPoints || samples != n || s.width&(s.width-1) != 0 {
			t.Errorf("instance %d: %d points of width %d holding %d samples", s.instance, len(s.buckets), s.width, samples)
		}
	}
	if got := c.lat[metricTTFT].n; got != n {
		t.Errorf("TTFT count %d, want %d", got, n)
	}
	runtime.KeepAlive(c)
}

// TestDownsample: merging keeps sums, maxima and times exact, and every
// point but the last covers width samples.
func TestDownsample(t *testing.T) {
	defer func(m int) { maxPoints = m }(maxPoints)
	maxPoints = 8
	c := NewCollector()
	const n = 37
	for s := int64(1); s <= n; s++ {
		c.Sample(s*1e9, 0, metrics.Snapshot{Running: int(s), LinkUtil: math.NaN()})
	}
	c.Sample(5e9, 0, metrics.Snapshot{Running: 1000}) // out of order: ignored
	s := c.series[0]
	if s.width != 8 || len(s.buckets) != 5 {
		t.Fatalf("width %d, %d points; want 8, 5", s.width, len(s.buckets))
	}
	var total float64
	for i, b := range s.buckets {
		wantN := int64(8)
		if i == len(s.buckets)-1 {
			wantN = n - 32
		}
		first := int64(i*8 + 1)
		if b.n != wantN || b.t0 != first*1e9 || b.t1 != (first+wantN-1)*1e9 || b.max[fieldRunning] != float64(first+wantN-1) {
			t.Errorf("point %d: %+v", i, b)
		}
		if b.sum[fieldLinkUtil] != 0 {
			t.Errorf("NaN link utilisation not recorded as 0")
		}
		total += b.sum[fieldRunning]
	}
	if total != n*(n+1)/2 || s.peak[fieldRunning] != n {
		t.Errorf("sum %v, peak %v", total, s.peak[fieldRunning])
	}
}

// TestCDF: the CDF is monotone, spans the exact min and max, ends at 1 and
// crosses 0.5 at the median within the histogram's precision.
func TestCDF(t *testing.T) {
	var l latency
	for i := int64(1); i <= 100_000; i++ {
		l.add(i * 37_000) // 37 us .. 3.7 s
	}
	pts := l.cdf()
	if len(pts) > 2*maxCDFPoints || len(pts) < 100 {
		t.Fatalf("%d points", len(pts))
	}
	if pts[0].x != 0.037 || pts[len(pts)-1] != (point{3700, 1}) {
		t.Errorf("first %v, last %v", pts[0], pts[len(pts)-1])
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].x < pts[i-1].x || pts[i].y <= pts[i-1].y {
			t.Fatalf("not increasing at %d: %v %v", i, pts[i-1], pts[i])
		}
	}
	for _, p := range pts {
		if p.y >= 0.5 {
			if math.Abs(p.x-1850)/1850 > 0.005 {
				t.Errorf("median %v ms, want 1850 ms", p.x)
			}
			break
		}
	}
	var empty latency
	if empty.cdf() != nil {
		t.Error("empty distribution has CDF points")
	}
}

// TestSamplingMatchesSeriesWriter: Watch, Advance and Close sample the
// same boundaries with the same state as the time-series CSV.
func TestSamplingMatchesSeriesWriter(t *testing.T) {
	running := 0
	snap := func() metrics.Snapshot { return metrics.Snapshot{Running: running} }
	var csv bytes.Buffer
	sw := metrics.NewSeriesWriter(&csv, metrics.DefaultSeriesPeriod)
	sw.Add(0, snap)
	c := NewCollector()
	c.Watch(0, snap)
	// events: (time, new running)
	for _, ev := range [][2]int64{{5e8, 1}, {1e9, 2}, {1e9 + 1, 3}, {3.5e9, 4}, {4e9, 5}} {
		if err := sw.Advance(ev[0]); err != nil {
			t.Fatal(err)
		}
		c.Advance(ev[0])
		running = int(ev[1])
	}
	const end = 4.2e9
	if err := sw.Close(end); err != nil {
		t.Fatal(err)
	}
	c.Close(end)
	c.Advance(9e9) // after Close: no effect
	var got []string
	for _, b := range c.series[0].buckets {
		got = append(got, fmt.Sprintf("%.1f,%g", float64(b.t0)/1e9, b.sum[fieldRunning]))
	}
	var want []string
	for _, row := range strings.Split(strings.TrimSpace(csv.String()), "\n")[1:] {
		f := strings.Split(row, ",")
		want = append(want, f[0]+","+f[4])
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("collector samples %v, series CSV %v", got, want)
	}
}

func TestWriteErrors(t *testing.T) {
	if err := Write(io.Discard, "x", nil); err == nil {
		t.Error("no runs: no error")
	}
	err := Write(failWriter{}, "x", []Run{synthetic("a", 10, 10, 1)})
	if !errors.Is(err, errFail) || !strings.HasPrefix(err.Error(), "report: ") {
		t.Errorf("write error not wrapped: %v", err)
	}
}

var errFail = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFail }

// TestLinkChartPeakMatchesTable: a KV link busy at 100 % for one sample
// of 1,000 (a short transfer) and 25 % for another shows 100.0 % in the
// instance table, and the link-utilisation chart, downsampled to buckets
// of many samples, peaks at the same 100 % (a bucket's mean would show
// 100/width %).
func TestLinkChartPeakMatchesTable(t *testing.T) {
	defer func(m int) { maxPoints = m }(maxPoints)
	maxPoints = 16
	c := NewCollector()
	for s := 1; s <= 1000; s++ {
		u := 0.0
		switch s {
		case 333:
			u = 1
		case 700:
			u = 0.25
		}
		c.Sample(int64(s)*1e9, 0, metrics.Snapshot{KVTotalBlocks: 100, LinkUtil: u})
	}
	r := Run{Name: "burst", Data: c}
	rv, err := runDetails(&r)
	if err != nil {
		t.Fatal(err)
	}
	cells := rv.Instances.Rows[0].Cells
	if got := cells[len(cells)-1]; got != "100.0 %" {
		t.Fatalf("table link util %q, want 100.0 %%", got)
	}
	sers := c.instances()
	if sers[0].width < 2 {
		t.Fatalf("series not downsampled (width %d)", sers[0].width)
	}
	peak, n25 := 0.0, 0
	for _, p := range chartPoints(sers[0], fieldLinkUtil) {
		peak = max(peak, p.y)
		if p.y == 25 {
			n25++
		}
	}
	if peak != 100 || n25 != 1 {
		t.Errorf("chart peak %g %% with %d points at 25 %%, want 100 %% and one", peak, n25)
	}
}

// Error bars show as a table of value and interval when the run has them,
// and not at all otherwise.
func TestWriteErrorBars(t *testing.T) {
	r := synthetic("bars", 200, 100, 10)
	if s := string(write(t, "t", r)); strings.Contains(s, "Error bars") {
		t.Errorf("a run without error bars shows some")
	}
	r.ErrorBars = &ErrorBars{Coverage: 0.9, Sources: "step band [-0.1, +0.2]",
		Stats: []Interval{{Metric: "throughput_rps", Value: 4.5, Lo: 4.25, Hi: 4.875}},
		NA:    []Interval{{Metric: "goodput_rps", Why: "no per-request SLO bounds"}}}
	page := write(t, "t", r)
	checkHTML(t, page)
	s := string(page)
	for _, w := range []string{
		"<caption>Error bars (90 % nominal); step band [-0.1, &#43;0.2]</caption>",
		"<td>throughput_rps</td><td>4.500</td><td>4.250 – 4.875</td>",
		"<td>goodput_rps</td><td>n/a</td><td>no per-request SLO bounds</td>",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

// TestSpeculativeRows: the run table shows speculative decoding's rows
// when a run speculated, "-" for a run that did not, and no such rows
// when none did.
func TestSpeculativeRows(t *testing.T) {
	on := synthetic("eagle", 3000, 300, 100)
	on.Summary.Speculative = &metrics.SpecResult{AcceptanceRate: 0.5663, MeanAcceptedLength: 2.699, TokensPerStep: 2.687, DraftShare: 0.1562}
	off := synthetic("off", 3000, 300, 100)
	s := string(write(t, "spec", on, off))
	for _, w := range []string{
		"<td>Speculative acceptance rate (%)</td><td>56.63</td><td>-</td>",
		"mean accepted length</td><td>2.699</td><td>-</td>",
		"draft share of step time (%)</td><td>15.62</td>",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if s := string(write(t, "no spec", off)); strings.Contains(s, "Speculative") {
		t.Error("speculative rows without speculation")
	}
}
