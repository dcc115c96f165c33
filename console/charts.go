package console

import (
	"fmt"
	"html/template"
	"math"
	"strings"
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
