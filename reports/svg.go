package reports

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Charts are drawn as inline SVG so an HTML report needs no script and no network:
// it opens the same offline, in a mail client, or printed to PDF.

// Series is one named set of values, one per label.
type Series struct {
	Name   string
	Values []float64
}

// palette is colour-blind-safe (Okabe–Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}

func esc(s string) string { return template.HTMLEscapeString(s) }

// NiceMax rounds a maximum up to 1, 2 or 5 × a power of ten, for axis ticks
// (the reports' charts and the console's).
func NiceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// StackedBars draws one horizontal bar per label, its series stacked (e.g. used and
// idle cost per team), with a legend and the total at the end of each bar.
func StackedBars(title, unit string, labels []string, series []Series) template.HTML {
	const left, barH, gap, width = 160, 22, 8, 720
	height := 40 + len(labels)*(barH+gap) + 30
	totals := make([]float64, len(labels))
	for _, s := range series {
		for i, v := range s.Values {
			if i < len(totals) && v > 0 {
				totals[i] += v
			}
		}
	}
	maxV := 0.0
	for _, t := range totals {
		maxV = max(maxV, t)
	}
	scale := NiceMax(maxV)
	plotW := float64(width - left - 90)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, esc(title), width, height, width, height)
	fmt.Fprintf(&b, `<title>%s</title><text x="0" y="18" class="title">%s</text>`, esc(title), esc(title))
	for i, l := range labels {
		y := 40 + i*(barH+gap)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="label">%s</text>`, left-8, y+barH-6, esc(l))
		x := float64(left)
		for si, s := range series {
			if i >= len(s.Values) || s.Values[i] <= 0 {
				continue
			}
			w := s.Values[i] / scale * plotW
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s %s</title></rect>`,
				x, y, w, barH, palette[si%len(palette)], esc(l), esc(s.Name), fmtNum(s.Values[i]), esc(unit))
			x += w
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="value">%s %s</text>`, x+6, y+barH-6, fmtNum(totals[i]), esc(unit))
	}
	ly := height - 12
	for si, s := range series {
		lx := left + si*160
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" class="legend">%s</text>`,
			lx, ly-10, palette[si%len(palette)], lx+16, ly, esc(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Lines draws series over labels (e.g. days) with a y axis.
func Lines(title, unit string, labels []string, series []Series) template.HTML {
	const left, top, width, height = 60, 36, 720, 260
	plotW, plotH := float64(width-left-20), float64(height-top-50)
	maxV := 0.0
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				maxV = max(maxV, v)
			}
		}
	}
	scale := NiceMax(maxV)
	step := plotW
	if len(labels) > 1 {
		step = plotW / float64(len(labels)-1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, esc(title), width, height, width, height)
	fmt.Fprintf(&b, `<title>%s</title><text x="0" y="18" class="title">%s</text>`, esc(title), esc(title))
	for k := 0; k <= 4; k++ {
		y := float64(top) + plotH - plotH*float64(k)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" text-anchor="end" class="axis">%s</text>`,
			left, float64(left)+plotW, y, y, left-6, y+4, fmtNum(scale*float64(k)/4))
	}
	every := max(1, len(labels)/10)
	for i, l := range labels {
		if i%every == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" class="axis">%s</text>`, float64(left)+step*float64(i), float64(top)+plotH+16, esc(l))
		}
	}
	for si, s := range series {
		var pts []string
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", float64(left)+step*float64(i), float64(top)+plotH-v/scale*plotH))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s (%s)</title></polyline>`,
			palette[si%len(palette)], strings.Join(pts, " "), esc(s.Name), esc(unit))
		lx := left + si*160
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" class="legend">%s</text>`,
			lx, height-20, palette[si%len(palette)], lx+16, height-10, esc(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Heatmap draws rows × columns of ratios 0..1 (e.g. utilisation by card and hour of
// day); NaN cells are left blank.
func Heatmap(title string, rows, cols []string, values [][]float64) template.HTML {
	const left, top, cell = 120, 40, 24
	width := left + len(cols)*cell + 20
	height := top + len(rows)*cell + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, esc(title), width, height, width, height)
	fmt.Fprintf(&b, `<title>%s</title><text x="0" y="18" class="title">%s</text>`, esc(title), esc(title))
	for j, c := range cols {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" class="axis">%s</text>`, left+j*cell+cell/2, top-4, esc(c))
	}
	for i, r := range rows {
		y := top + i*cell
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="label">%s</text>`, left-6, y+cell-8, esc(r))
		for j := range cols {
			if i >= len(values) || j >= len(values[i]) || math.IsNaN(values[i][j]) {
				continue
			}
			v := min(max(values[i][j], 0), 1)
			// White (idle) to dark blue (busy).
			c := fmt.Sprintf("rgb(%d,%d,%d)", int(255-200*v), int(255-140*v), int(255-75*v))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s %s:00 %.0f%%</title></rect>`,
				left+j*cell, y, cell-1, cell-1, c, esc(r), esc(cols[j]), v*100)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
