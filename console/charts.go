package console

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/gpupool/gpupool/reports"
)

// sparkline draws ratios 0..1 (NaN: no data) as a small filled line, one point
// per value, with the last value's dot: utilisation over the last 24 hours.
func sparkline(title string, values []float64) template.HTML {
	const w, h = 120, 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d"><title>%s</title>`,
		template.HTMLEscapeString(title), w, h, w, h, template.HTMLEscapeString(title))
	step := float64(w-4) / float64(max(1, len(values)-1))
	var seg []string
	flush := func() {
		if len(seg) > 1 {
			fmt.Fprintf(&b, `<polyline class="spark-line" fill="none" points="%s"/>`, strings.Join(seg, " "))
		} else if len(seg) == 1 {
			fmt.Fprintf(&b, `<circle class="spark-dot" r="1.5" cx="%s"/>`, strings.Replace(seg[0], ",", `" cy="`, 1))
		}
		seg = seg[:0]
	}
	lastX, lastY := -1.0, 0.0
	for i, v := range values {
		if math.IsNaN(v) {
			flush()
			continue
		}
		x, y := 2+step*float64(i), float64(h-2)-min(max(v, 0), 1)*float64(h-4)
		seg = append(seg, fmt.Sprintf("%.1f,%.1f", x, y))
		lastX, lastY = x, y
	}
	flush()
	if lastX >= 0 {
		fmt.Fprintf(&b, `<circle class="spark-end" r="2.5" cx="%.1f" cy="%.1f"/>`, lastX, lastY)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// chartPalette is colour-blind-safe (Okabe–Ito); a series past the eighth
// is dashed, so that 16 GPUs are 16 distinct lines.
var chartPalette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#8c6d1f", "#000000"}

// marker is an event drawn across a timeline: a policy's notify, a reclaim, a
// stop.
type marker struct {
	At    time.Time
	Label string // the decision: notify, reclaim, stop
	Title string // what the tooltip says
}

// timeline draws one line per series (a GPU) over buckets from `from`, each of
// `bucket`, with the markers as labelled vertical lines and a legend that wraps
// onto as many rows as the series need.
func timeline(title, unit string, from time.Time, bucket time.Duration, labels []string, series []reports.Series, marks []marker) template.HTML {
	const left, top, width, legendW, legendRowH = 56, 40, 580, 130, 16
	plotW := float64(width - left - 16)
	perRow := max(1, (width-left)/legendW)
	legendRows := (len(series) + perRow - 1) / perRow
	plotH := 170.0
	height := top + int(plotH) + 26 + legendRows*legendRowH + 6
	maxV := 0.0
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				maxV = max(maxV, v)
			}
		}
	}
	scale := reports.NiceMax(maxV)
	step := plotW / float64(max(1, len(labels)-1))
	xAt := func(t time.Time) float64 { return float64(left) + float64(t.Sub(from))/float64(bucket)*step }
	var b strings.Builder
	e := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="chart timeline" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, e(title), width, height, width, height)
	fmt.Fprintf(&b, `<title>%s</title><text x="0" y="16" class="title">%s</text>`, e(title), e(title))
	for k := 0; k <= 4; k++ {
		y := float64(top) + plotH - plotH*float64(k)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" text-anchor="end" class="axis">%s</text>`,
			left, float64(left)+plotW, y, y, left-6, y+4, axisNum(scale*float64(k)/4))
	}
	every := max(1, len(labels)/6)
	for i, l := range labels {
		if i%every == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" class="axis">%s</text>`, float64(left)+step*float64(i), float64(top)+plotH+16, e(l))
		}
	}
	for si, s := range series {
		var pts []string
		for i, v := range s.Values {
			if !math.IsNaN(v) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", float64(left)+step*float64(i), float64(top)+plotH-min(v/scale, 1)*plotH))
			}
		}
		colour, dash := chartPalette[si%len(chartPalette)], ""
		if si >= len(chartPalette) {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"><title>%s (%s)</title></polyline>`,
			colour, dash, strings.Join(pts, " "), e(s.Name), e(unit))
		lx, ly := left+(si%perRow)*legendW, top+int(plotH)+26+(si/perRow)*legendRowH
		fmt.Fprintf(&b, `<g class="legend-item"><title>%s</title><line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"%s/><text x="%d" y="%d" class="legend">%s</text></g>`,
			e(s.Name), lx, lx+14, ly+8, ly+8, colour, dash, lx+18, ly+12, e(shortGPU(si, s.Name)))
	}
	for i, m := range marks {
		x := xAt(m.At)
		if x < float64(left) || x > float64(left)+plotW+1 {
			continue
		}
		fmt.Fprintf(&b, `<g class="marker marker-%s" data-decision="%s"><title>%s</title><line x1="%.1f" x2="%.1f" y1="%d" y2="%.0f" stroke-dasharray="3 2"/><text x="%.1f" y="%d" text-anchor="middle" class="mark">%s</text></g>`,
			e(m.Label), e(m.Label), e(m.Title), x, x, top-4, float64(top)+plotH, x, top-8-(i%2)*10, e(m.Label))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// shortGPU is a legend's name for a GPU: its index and the end of its UUID.
func shortGPU(i int, uuid string) string {
	if len(uuid) > 8 {
		uuid = "…" + uuid[len(uuid)-6:]
	}
	return fmt.Sprintf("GPU %d %s", i, uuid)
}

func axisNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
