package main

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "save the browser test's screenshot as docs/report-pd-stress.png")

// screenshotDoc is the screenshot referenced from docs/outputs.md.
const screenshotDoc = "../../docs/report-pd-stress.png"

// chromium returns the headless browser, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (Debian: apt-get install -y chromium): skipping the headless-browser check of --report")
	return ""
}

// headless runs chromium headless with networking disabled and returns its
// stdout.
func headless(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--host-resolver-rules=MAP * ~NOTFOUND", // no name resolves: nothing can be fetched
		"--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

func fileURL(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

var chartRE = regexp.MustCompile(`(?s)<svg class="chart"[^>]*aria-label="([^"]*)"[^>]*>(.*?)</svg>`)

// checkDOM loads the report in the browser and checks that every chart of
// the file is in the rendered DOM as an SVG element with lines and text.
func checkDOM(t *testing.T, bin, report string) {
	t.Helper()
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Count(page, []byte(`<svg class="chart"`))
	if want == 0 {
		t.Fatalf("%s has no chart", report)
	}
	dom := headless(t, bin, "--dump-dom", fileURL(t, report))
	if !bytes.Contains(dom, []byte("<h1>")) || bytes.Contains(dom, []byte("parsererror")) {
		t.Fatalf("the browser did not render the report:\n%.2000s", dom)
	}
	charts := chartRE.FindAllSubmatch(dom, -1)
	if len(charts) != want {
		t.Fatalf("the browser's DOM has %d charts, the file %d", len(charts), want)
	}
	for _, c := range charts {
		label, body := c[1], c[2]
		if !bytes.Contains(body, []byte("<path")) || !bytes.Contains(body, []byte("<text")) || len(body) < 2000 {
			t.Errorf("chart %q rendered empty (%d bytes)", label, len(body))
		}
	}
	t.Logf("%s: %d charts rendered", filepath.Base(report), len(charts))
}

// countColor counts the pixels of img with exactly colour c.
func countColor(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(bl>>8) == c.B {
				n++
			}
		}
	}
	return n
}

// TestReportInBrowser builds the --report of examples/pd-stress.yaml
// (handoff policy pull), opens it in headless Chromium from a file URL with
// networking disabled, checks that every chart rendered as a non-empty SVG
// and takes a 1400x2400 screenshot (saved as docs/report-pd-stress.png
// with -update-screenshot, else kept with go test -artifacts).
func TestReportInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "report.html")
	code, stdout, stderr := run(t, "run", "-q", "-c", pdStress, "--report", report)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "servesim summary") {
		t.Fatalf("no summary on stdout:\n%s", stdout)
	}
	checkDOM(t, bin, report)

	shot := filepath.Join(t.ArtifactDir(), "report-pd-stress.png")
	headless(t, bin, "--screenshot="+shot, "--window-size=1400,2400", "--hide-scrollbars", fileURL(t, report))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 2400 {
		t.Errorf("screenshot is %v, want 1400x2400", b.Size())
	}
	// Drawn charts show the first series colour (CDF and instance #0
	// lines) and the finished-requests bar.
	for _, c := range []struct {
		name string
		rgb  color.RGBA
		min  int
	}{{"line blue #4e79a7", color.RGBA{0x4e, 0x79, 0xa7, 0xff}, 500}, {"bar green #59a14f", color.RGBA{0x59, 0xa1, 0x4f, 0xff}, 5000}} {
		n := countColor(img, c.rgb)
		if n < c.min {
			t.Errorf("screenshot has %d pixels of %s, want >= %d: charts not drawn?", n, c.name, c.min)
		}
		t.Logf("screenshot: %d pixels of %s", n, c.name)
	}
	if *updateScreenshot {
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(screenshotDoc), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(screenshotDoc, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", screenshotDoc)
	}
}

// TestCompareReportInBrowser: the --report of servesim compare on
// examples/pd-stress.yaml (five policies, eager stopping) renders every
// chart in the browser.
func TestCompareReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 608-request scenario under five policies")
	}
	bin := chromium(t)
	report := filepath.Join(t.TempDir(), "compare.html")
	code, _, stderr := run(t, "compare", "-c", pdStress, "--report", report)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkDOM(t, bin, report)
}
