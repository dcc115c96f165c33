package billing

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	chromiumpkg "github.com/gpupool/gpupool/reports/chromium"
)

func chromium(t *testing.T) string { return chromiumpkg.Path(t) }

// TestHTMLRendersCharts renders the HTML report in headless Chromium and checks
// the screenshot: the cost bars (palette blue for used, orange for idle), the
// utilisation heatmap (its blue scale) and the idle trend lines are drawn, top to
// bottom in that order.
func TestHTMLRendersCharts(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "chargeback-2026-11.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, goldenReport(t)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, "--window-size=1200,2400", "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	pf, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatal(err)
	}

	type found struct {
		n             int
		firstY, lastY int
	}
	// block: the pixel is inside a flat area of its colour (a bar or a cell, not
	// anti-aliased text).
	block := func(x, y int) bool {
		r, g, b := rgb(img, x, y)
		for _, d := range [][2]int{{4, 0}, {0, 4}, {-4, 0}, {0, -4}} {
			r2, g2, b2 := rgb(img, x+d[0], y+d[1])
			if r2 != r || g2 != g || b2 != b {
				return false
			}
		}
		return true
	}
	count := func(match func(r, g, b int) bool) found {
		fd := found{firstY: -1}
		bounds := img.Bounds()
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			for x := bounds.Min.X; x < bounds.Max.X; x++ {
				r, g, b := rgb(img, x, y)
				if match(r, g, b) {
					if fd.firstY < 0 {
						fd.firstY = y
					}
					fd.n, fd.lastY = fd.n+1, y
				}
			}
		}
		return fd
	}
	near := func(r, g, b, R, G, B int) bool { return abs(r-R) <= 12 && abs(g-G) <= 12 && abs(b-B) <= 12 }
	// palette[0], blue: used cost bars, the idle cost line.
	blue := count(func(r, g, b int) bool { return near(r, g, b, 0x00, 0x72, 0xB2) })
	// palette[1], orange: idle cost bars, the total cost line.
	orange := count(func(r, g, b int) bool { return near(r, g, b, 0xE6, 0x9F, 0x00) })
	// Heatmap cells: flat areas on its colour scale.
	heat := found{firstY: -1}
	for y := img.Bounds().Min.Y + 4; y < img.Bounds().Max.Y-4; y++ {
		for x := img.Bounds().Min.X + 4; x < img.Bounds().Max.X-4; x++ {
			if r, g, b := rgb(img, x, y); isHeatmapColour(r, g, b) && block(x, y) {
				if heat.firstY < 0 {
					heat.firstY = y
				}
				heat.n, heat.lastY = heat.n+1, y
			}
		}
	}
	white := count(func(r, g, b int) bool { return r > 250 && g > 250 && b > 250 })
	t.Logf("pixels: blue %d (y %d–%d), orange %d (y %d–%d), heatmap %d (y %d–%d), white %d",
		blue.n, blue.firstY, blue.lastY, orange.n, orange.firstY, orange.lastY, heat.n, heat.firstY, heat.lastY, white.n)

	size := img.Bounds().Dx() * img.Bounds().Dy()
	if white.n > size*98/100 {
		t.Fatalf("the page is blank (%d of %d pixels white)", white.n, size)
	}
	if blue.n < 3000 {
		t.Errorf("cost by team: %d pixels of the used-cost blue, want the bars (≥ 3000)", blue.n)
	}
	if orange.n < 1500 {
		t.Errorf("cost by team: %d pixels of the idle orange, want the bars (≥ 1500)", orange.n)
	}
	if heat.n < 2000 {
		t.Errorf("utilisation heatmap: %d pixels of its blue scale, want several cells (≥ 2000)", heat.n)
	}
	if !(blue.firstY < heat.firstY && heat.lastY < orange.lastY && heat.lastY < blue.lastY) {
		t.Errorf("charts out of order: bars from y=%d, heatmap y=%d–%d, trend lines down to y=%d/%d",
			blue.firstY, heat.firstY, heat.lastY, blue.lastY, orange.lastY)
	}
}

// isHeatmapColour reports whether a pixel is on reports.Heatmap's scale,
// rgb(255−200v, 255−140v, 255−75v), for an activity v ≥ 0.15. Anti-aliased edges of
// the palette blue lie on a different line (their red falls faster), so they do
// not count.
func isHeatmapColour(r, g, b int) bool {
	v := float64(255-g) / 140
	if v < 0.15 || v > 1 {
		return false
	}
	return abs(r-int(255-200*v)) <= 5 && abs(b-int(255-75*v)) <= 5
}

func rgb(img image.Image, x, y int) (int, int, int) {
	r, g, b, _ := img.At(x, y).RGBA()
	return int(r >> 8), int(g >> 8), int(b >> 8)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
