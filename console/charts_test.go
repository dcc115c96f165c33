package console

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/reports"
)

// TestTimelineLegendAndMarkers: a 16-GPU job's legend has one entry per GPU,
// none overlapping another and none past the chart's edge, the series past
// the eighth colour are dashed, and the notify, reclaim and stop actions are
// drawn where they happened; one outside the run is left out.
func TestTimelineLegendAndMarkers(t *testing.T) {
	from := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	labels := make([]string, 61)
	for i := range labels {
		labels[i] = from.Add(time.Duration(i) * time.Minute).Format("15:04")
	}
	var series []reports.Series
	for g := range 16 {
		v := make([]float64, len(labels))
		for i := range v {
			v[i] = float64(g + i%7)
		}
		series = append(series, reports.Series{Name: fmt.Sprintf("GPU-%08d-aaaa-bbbb-cccc-%012d", g, g), Values: v})
	}
	marks := []marker{
		{At: from.Add(10 * time.Minute), Label: "notify", Title: "notify at 08:10"},
		{At: from.Add(30 * time.Minute), Label: "reclaim", Title: "reclaim at 08:30"},
		{At: from.Add(40 * time.Minute), Label: "stop", Title: "stop at 08:40"},
		{At: from.Add(3 * time.Hour), Label: "stop", Title: "after the run"},
	}
	svg := string(timeline("SM active (%) per GPU", "%", from, time.Minute, labels, series, marks))
	width, _ := strconv.Atoi(regexp.MustCompile(`width="(\d+)"`).FindStringSubmatch(svg)[1])
	items := regexp.MustCompile(`<g class="legend-item"><title>[^<]*</title><line x1="(\d+)" x2="\d+" y1="(\d+)"`).FindAllStringSubmatch(svg, -1)
	if len(items) != 16 {
		t.Fatalf("%d legend entries, want 16", len(items))
	}
	seen := map[string]bool{}
	for _, it := range items {
		x, _ := strconv.Atoi(it[1])
		if seen[it[1]+","+it[2]] {
			t.Errorf("two legend entries at %s,%s", it[1], it[2])
		}
		seen[it[1]+","+it[2]] = true
		if x+130 > width {
			t.Errorf("a legend entry at x=%d runs past the chart's %d px", x, width)
		}
	}
	if n := strings.Count(svg, `stroke-dasharray="5 3"`); n != 16 { // 8 lines and their 8 legend keys
		t.Errorf("%d dashed strokes, want the 8 series past the palette and their legend keys (16)", n)
	}
	for _, d := range []string{"notify", "reclaim", "stop"} {
		if !strings.Contains(svg, `data-decision="`+d+`"`) {
			t.Errorf("no %s marker", d)
		}
	}
	if strings.Contains(svg, "after the run") {
		t.Error("a marker after the run is drawn")
	}
	if !strings.Contains(svg, "GPU 15 …000015") {
		t.Error("the legend does not name GPU 15 by its index and the end of its UUID")
	}
}
