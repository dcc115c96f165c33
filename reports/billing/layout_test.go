package billing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	chromiumpkg "github.com/gpupool/gpupool/reports/chromium"
)

// TestHTMLFitsThePage opens the HTML report in headless Chromium at 1280 px and
// checks its layout: no element runs past the right edge of the page, and no
// findings row grows taller than a few lines (a long recommendation or job name
// wraps inside its column instead of squeezing the others).
func TestHTMLFitsThePage(t *testing.T) {
	rep := goldenReport(t)
	if len(rep.Findings) == 0 {
		t.Fatal("the golden report has no findings to lay out")
	}
	// The longest real-world cells: a long job key and a long recommendation.
	rep.Findings[0].Job = "k8s/ml-platform-research/llama-finetune-sweep-lr3e-5-worker-0"
	rep.Findings[0].Recommendation = strings.Repeat("Reclaim it or move it to a smaller MIG profile that fits its memory; ", 2)
	// The golden month has too little history for a forecast: lay out a page that has one.
	rep.Capacity = testCapacityPage(t)
	page := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, rep); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := chromiumpkg.Browser(t, 1280, 900)
	type layout struct {
		Width, Scroll int
		Over          []string
		TallestRow    float64
	}
	const measure = `(() => {
	  const w = document.documentElement.clientWidth, over = [];
	  for (const el of document.querySelectorAll('body *')) {
	    const r = el.getBoundingClientRect();
	    if (r.right > w + 0.5) over.push(el.tagName + ' ' + (el.textContent || '').trim().slice(0, 40) + ' → ' + Math.round(r.right));
	  }
	  let tallest = 0;
	  for (const tr of document.querySelectorAll('table.findings tr')) tallest = Math.max(tallest, tr.getBoundingClientRect().height);
	  return {Width: w, Scroll: document.documentElement.scrollWidth, Over: over.slice(0, 10), TallestRow: tallest};
	})()`
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[layout](measure))
	if err != nil {
		t.Fatal(err)
	}
	if got.Scroll > got.Width || len(got.Over) > 0 {
		t.Errorf("the report is %d px wide in a %d px page; past the right edge: %v", got.Scroll, got.Width, got.Over)
	}
	if got.TallestRow == 0 {
		t.Error("no table.findings rows: the findings table is missing or renamed")
	}
	if got.TallestRow > 140 {
		t.Errorf("the tallest findings row is %.0f px high: a column is squeezed", got.TallestRow)
	}
}
