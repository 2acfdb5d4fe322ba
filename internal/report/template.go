package report

import "html/template"

// page is the report's HTML. It uses no scripts and no external resource:
// styles are inline and charts are inline SVG.
var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="servesim">
<title>{{.Title}}</title>
<style>
body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;margin:0;padding:0 24px 40px;color:#1f2328;background:#f6f8fa;font-size:14px}
header{padding:18px 0 8px;border-bottom:1px solid #d0d7de;margin-bottom:12px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:26px 0 10px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 8px}
.sub{color:#57606a;margin:0}
nav a{margin-right:14px;color:#0969da;text-decoration:none}
.stop{background:#fff1e5;border:1px solid #f0b37e;border-radius:6px;padding:8px 12px;margin:10px 0}
.tables{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
table{border-collapse:collapse;background:#fff;border:1px solid #d0d7de;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:bold;padding:4px 0}
th,td{padding:3px 10px;border-bottom:1px solid #eaeef2}
th{background:#f0f3f6;text-align:right}
th:first-child,td:first-child{text-align:left}
td{text-align:right;white-space:nowrap}
td:first-child{white-space:normal;max-width:36em}
td.sub{padding-left:26px;color:#57606a}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:14px}
figure{margin:0;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:6px}
svg.chart{display:block;width:100%;height:auto}
details{margin:12px 0;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:6px 12px}
details>summary{cursor:pointer;font-weight:bold;font-size:16px;padding:4px 0}
details .grid figure{border-color:#eaeef2}
.note{color:#57606a;font-size:13px}
pre.setup{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:6px 12px;margin:8px 0;white-space:pre-wrap}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p class="sub">servesim report: {{.Subtitle}}</p>
<nav><a href="#summary">Summary</a><a href="#latency">Outcomes and latency</a><a href="#instances">Instances over time</a></nav>
</header>
{{range .Stopped}}<div class="stop"><b>{{.Name}} stopped:</b> {{.Text}}</div>
{{end}}
<section id="summary">
<h2>Summary</h2>
{{$compare := .Compare}}{{range .Setup}}<pre class="setup">{{if $compare}}<b>{{.Name}}</b>
{{end}}{{range .Lines}}{{.}}
{{end}}</pre>
{{end}}<div class="tables">
{{template "table" .Summary}}
{{range .Latency}}{{template "table" .}}{{end}}
{{if .SLO.Rows}}{{template "table" .SLO}}{{end}}{{range .Bars}}{{template "table" .}}{{end}}
</div>
</section>
<section id="latency">
<h2>Outcomes and latency CDFs</h2>
<p class="note">CDFs cover finished requests, drawn from exact HDR histograms (3 significant digits).</p>
<div class="grid">
<figure>{{.Outcomes}}</figure>
{{range .CDFs}}<figure>{{.}}</figure>
{{end}}</div>
{{if .Reasons.Rows}}<div class="tables">{{template "table" .Reasons}}</div>{{else}}<p class="note">No request was rejected or failed.</p>{{end}}
</section>
<section id="instances">
<h2>Instances over time</h2>
{{range .Runs}}{{if $compare}}<details{{if .Open}} open="open"{{end}}>
<summary>{{.Name}}</summary>
<div class="tables">{{template "table" .Latency}}</div>
{{end}}<div class="tables">
{{template "table" .Instances}}
{{if .Pinned.Rows}}{{template "table" .Pinned}}{{end}}
{{if .Faults.Caption}}{{template "table" .Faults}}{{end}}
</div>
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
<div class="grid">
{{range .Series}}<figure>{{.}}</figure>
{{end}}</div>
{{if $compare}}</details>
{{end}}{{end}}</section>
</body>
</html>
{{define "table"}}<table>
<caption>{{.Caption}}</caption>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><td{{if .Sub}} class="sub"{{end}}>{{.Label}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}`))
