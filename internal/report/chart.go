package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart size in points; the page scales the SVG to its column width.
const (
	chartW = 540
	chartH = 270
	// maxLegend is the most legend entries drawn; further ones are summed
	// up in one "+N more" entry.
	maxLegend = 14
)

// palette is Tableau 10: distinguishable colours, assigned in order.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff},
	{0x76, 0xb7, 0xb2, 0xff}, {0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff},
	{0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff}, {0x9c, 0x75, 0x5f, 0xff},
	{0xba, 0xb0, 0xac, 0xff},
}

// outcomeColors are the bar colours of finished, rejected and failed.
var outcomeColors = []color.RGBA{
	{0x59, 0xa1, 0x4f, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff},
}

// lineStyle returns the style of the i-th line of a chart: the palette
// colour, then dashed once the palette is exhausted.
func lineStyle(i int) draw.LineStyle {
	sty := draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.5)}
	switch (i / len(palette)) % 3 {
	case 1:
		sty.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	case 2:
		sty.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return sty
}

// line is one named polyline of a chart.
type line struct {
	name string
	pts  []point
}

// lineChart describes a chart of lines.
type lineChart struct {
	title, xLabel, yLabel string
	lines                 []line
	logX                  bool    // logarithmic x axis (every x must be > 0)
	yMax                  float64 // fixed y maximum when > 0; y starts at 0
	empty                 string  // note drawn when no line has a point
	// marks are x positions drawn as dashed vertical lines (events).
	marks []float64
}

// xys adapts points to plotter.XYer.
type xys []point

func (p xys) Len() int                    { return len(p) }
func (p xys) XY(i int) (float64, float64) { return p[i].x, p[i].y }

// sans sets sty to the report's typeface (gonum/plot defaults to a serif)
// at size points.
func sans(sty *text.Style, size float64) {
	sty.Font.Typeface = "Liberation"
	sty.Font.Variant = "Sans"
	sty.Font.Size = vg.Points(size)
}

// newLegend returns a legend in the report's style.
func newLegend() plot.Legend {
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	sans(&leg.TextStyle, 10)
	return leg
}

// newPlot returns a plot with the report's common styling.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	sans(&p.Title.TextStyle, 13)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		sans(&a.Label.TextStyle, 11)
		sans(&a.Tick.Label, 10)
		a.Tick.Marker = niceTicks{}
	}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe4}
	g.Horizontal.Color = color.Gray{Y: 0xe4}
	p.Add(g)
	return p
}

// svg renders c as an inline SVG element.
func (c *lineChart) svg() (template.HTML, error) {
	p := newPlot(c.title, c.xLabel, c.yLabel)
	leg := newLegend()
	nleg := 0
	points := 0
	for i, l := range c.lines {
		if len(l.pts) == 0 {
			continue
		}
		points += len(l.pts)
		pl, err := plotter.NewLine(xys(l.pts))
		if err != nil {
			return "", fmt.Errorf("report: chart %q, line %q: %w", c.title, l.name, err)
		}
		pl.LineStyle = lineStyle(i)
		p.Add(pl)
		switch {
		case l.name == "":
		case nleg < maxLegend:
			leg.Add(l.name, pl)
			nleg++
		case nleg == maxLegend:
			leg.Add(fmt.Sprintf("+%d more", countNamed(c.lines[i:])))
			nleg++
		}
	}
	if c.logX && points > 0 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	p.Y.Min = 0
	if c.yMax > 0 {
		p.Y.Max = c.yMax
	}
	if points == 0 {
		p.X.Min, p.X.Max = 0, 1
		p.Y.Max = max(p.Y.Max, 1)
		note := c.empty
		if note == "" {
			note = "no data"
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: p.Y.Max / 2}}, Labels: []string{note}})
		if err != nil {
			return "", fmt.Errorf("report: chart %q: %w", c.title, err)
		}
		lb.TextStyle[0].XAlign = draw.XCenter
		sans(&lb.TextStyle[0], 12)
		p.Add(lb)
	} else if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1 // a flat zero series still gets a visible axis
	}
	if len(c.marks) > 0 && points > 0 {
		top := max(p.Y.Max, 1)
		for _, x := range c.marks {
			m, err := plotter.NewLine(xys{{x: x, y: 0}, {x: x, y: top}})
			if err != nil {
				return "", fmt.Errorf("report: chart %q, mark at %g: %w", c.title, x, err)
			}
			m.LineStyle.Color = color.Gray{Y: 0x90}
			m.LineStyle.Width = vg.Points(0.5)
			m.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(m)
		}
	}
	if nleg == 0 {
		return render(p, nil, c.title)
	}
	return render(p, &leg, c.title)
}

func countNamed(ls []line) int {
	n := 0
	for _, l := range ls {
		if l.name != "" && len(l.pts) > 0 {
			n++
		}
	}
	return n
}

// barGroup is one bar series of a grouped bar chart.
type barGroup struct {
	name   string
	values []float64 // one per category
	color  color.Color
}

// barChart renders grouped vertical bars: one group of len(groups) bars
// per category.
func barChart(title, yLabel string, categories []string, groups []barGroup) (template.HTML, error) {
	p := newPlot(title, "", yLabel)
	leg := newLegend()
	// Bars share the plot width: about 60 % of each category's slot.
	slot := vg.Points(float64(chartW-160) / float64(max(len(categories), 1)))
	w := slot * 0.6 / vg.Length(max(len(groups), 1))
	top := 0.0
	for i, g := range groups {
		b, err := plotter.NewBarChart(plotter.Values(g.values), w)
		if err != nil {
			return "", fmt.Errorf("report: chart %q: %w", title, err)
		}
		b.Color = g.color
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(len(groups)-1)/2)
		p.Add(b)
		leg.Add(g.name, b)
		for _, v := range g.values {
			top = max(top, v)
		}
	}
	p.NominalX(categories...)
	p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
	p.Y.Min, p.Y.Max = 0, max(top*1.08, 1)
	return render(p, &leg, title)
}

// render draws p, with leg in a column on its right when not nil, into an
// SVG and returns the <svg> element (without the XML prolog, so that it
// can be inlined in HTML), labelled for assistive technology.
func render(p *plot.Plot, leg *plot.Legend, label string) (template.HTML, error) {
	w, h := vg.Points(chartW), vg.Points(chartH)
	cv := vgsvg.New(w, h)
	dc := draw.New(cv)
	if leg != nil {
		lw := leg.Rectangle(dc).Size().X
		pad := vg.Points(10)
		p.Draw(draw.Crop(dc, 0, -(lw + 2*pad), 0, 0))
		leg.Draw(draw.Crop(dc, w-lw-pad, 0, 0, -vg.Points(30)))
	} else {
		p.Draw(dc)
	}
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("report: rendering chart %q: %w", label, err)
	}
	s := buf.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("report: rendering chart %q: no <svg> element in output", label)
	}
	s = `<svg class="chart" role="img" aria-label="` + html.EscapeString(label) + `"` + strings.TrimPrefix(s[i:], "<svg")
	return template.HTML(s), nil // #nosec: produced by vgsvg, which escapes text
}

// logTicks labels the powers of ten of a log axis (and their doubles and
// quintuples when it spans fewer than three decades) and marks the other
// integer multiples without labels.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || hi < lo {
		return nil
	}
	var ticks []plot.Tick
	few := math.Log10(hi/lo) < 3 // few decades: label 2x and 5x too
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		d := math.Pow(10, e)
		for i := 1; i < 10; i++ {
			v := d * float64(i)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || few && (i == 2 || i == 5) {
				t.Label = strconv.FormatFloat(v, 'g', 6, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// niceTicks labels about six round values (1, 2 or 5 times a power of ten
// apart) of a linear axis.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi; k++ {
		v := k * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
		if minor := v + step/2; minor <= hi {
			ticks = append(ticks, plot.Tick{Value: minor})
		}
	}
	return ticks
}
