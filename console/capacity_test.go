package console

import (
	"context"
	"fmt"
	"html"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/store"
)

// The simulated store holds eight hours, too little for a capacity forecast
// (three weeks). historyStore serves the simulated store with eight weeks of
// capacity history ending at its now: the capacity view's rows and the
// chargeback's inventory are the series below, every other query (prices,
// the data's clock) the simulated store's.
type historyStore struct {
	Store
	series []capacity.Series
	// mig is a card's MIG slices per GPU (none: whole GPUs).
	mig map[string][]string
}

// historySeries: per cluster and card type, GPUs there and their demand per
// hour over eight weeks from start. H100s whose weekday working hours ask for
// more than they hold, a little more each week; A100s split in part into MIG
// slices; L40S whose demand grows steadily with a daily rhythm (the model
// beats the naive forecast); a card type the price book does not price; and H100s of a second cluster with ten days of data only (too
// little history).
func historySeries(start time.Time) []capacity.Series {
	const n = 8 * capacity.HoursPerWeek
	mk := func(cluster, card string, gpus float64, first int, want func(i int, t time.Time) float64) capacity.Series {
		s := capacity.Series{Cluster: cluster, Card: card, Start: start,
			Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)}
		backlog := 0.0
		for i := first; i < n; i++ {
			t := start.Add(time.Duration(i) * time.Hour)
			s.Capacity[i] = gpus
			backlog += want(i, t)
			s.Running[i] = math.Min(backlog, gpus)
			backlog -= s.Running[i]
			s.Queued[i] = backlog
		}
		return s
	}
	working := func(t time.Time) bool {
		return t.Weekday() != time.Saturday && t.Weekday() != time.Sunday && t.Hour() >= 9 && t.Hour() < 18
	}
	return []capacity.Series{
		mk("c1", "A100-40GB", 6, 0, func(i int, t time.Time) float64 {
			if working(t) {
				return 4.5
			}
			return 1.5
		}),
		mk("c1", "H100-80GB", 16, 0, func(i int, t time.Time) float64 {
			w := 6 + 0.3*float64(i)/capacity.HoursPerWeek
			if working(t) {
				w += 14
			}
			return w
		}),
		mk("c1", "L40S-48GB", 8, 0, func(i int, t time.Time) float64 {
			return 2 + 0.4*float64(i)/capacity.HoursPerWeek + math.Sin(float64(t.Hour())/24*2*math.Pi)
		}),
		mk("c2", "RTX-6000-48GB", 4, 0, func(i int, t time.Time) float64 { return 1 + float64(i%5)/4 }),
		mk("c2", "H100-80GB", 8, n-240, func(int, time.Time) float64 { return 3 }),
	}
}

// historyMIG: two of the A100s are split into seven 1g.5gb slices each.
var historyMIG = map[string][]string{"A100-40GB": {"", "", "", "", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb",
	"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}}

// newHistoryStore is the simulated store with historySeries ending at the hour
// of its now, and that hour.
func newHistoryStore(t testing.TB) (*historyStore, time.Time) {
	t.Helper()
	s := simStore(t)
	c, err := New(DefaultConfig(), s, newGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	at := c.now(context.Background()).UTC().Truncate(time.Hour)
	return &historyStore{Store: s, series: historySeries(at.Add(-8 * capacity.HoursPerWeek * time.Hour)), mig: historyMIG}, at
}

func (h *historyStore) Query(ctx context.Context, sql string, p store.Params) (*store.Result, error) {
	switch {
	case strings.Contains(sql, "FROM capacity\n") && strings.Contains(sql, "GROUP BY cluster, card, hour"):
		return h.history(p)
	case strings.Contains(sql, "FROM chargeback_hourly_current") && strings.Contains(sql, "GROUP BY gpu_uuid"):
		return h.inventory(), nil
	}
	return h.Store.Query(ctx, sql, p)
}

// history is the capacity view's rows in [from, to) (hours with GPUs only: the
// view has a row for refreshed hours).
func (h *historyStore) history(p store.Params) (*store.Result, error) {
	from, err1 := time.Parse(time.DateTime, p["from"])
	to, err2 := time.Parse(time.DateTime, p["to"])
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("history store: from %q, to %q: want times", p["from"], p["to"])
	}
	res := &store.Result{Columns: []store.ColumnMeta{{Name: "cluster"}, {Name: "card"}, {Name: "hour"}, {Name: "capacity"}, {Name: "running"}, {Name: "queued"}}}
	for _, s := range h.series {
		for i := range s.Capacity {
			hr := s.Start.Add(time.Duration(i) * time.Hour)
			if s.Capacity[i] > 0 && !hr.Before(from) && hr.Before(to) {
				res.Rows = append(res.Rows, []any{s.Cluster, s.Card, hr, s.Capacity[i], s.Running[i], s.Queued[i]})
			}
		}
	}
	return res, nil
}

// inventory is the units of each series, reported in its last hour.
func (h *historyStore) inventory() *store.Result {
	res := &store.Result{Columns: []store.ColumnMeta{{Name: "gpu_uuid"}, {Name: "cluster"}, {Name: "card"}, {Name: "mig_profile"}, {Name: "last_hour"}}}
	for _, s := range h.series {
		last := s.Start.Add(time.Duration(len(s.Capacity)-1) * time.Hour)
		profiles := h.mig[s.Card]
		if profiles == nil || s.Cluster != "c1" {
			profiles = make([]string, int(s.Capacity[len(s.Capacity)-1]))
		}
		for i, p := range profiles {
			res.Rows = append(res.Rows, []any{fmt.Sprintf("GPU-%s-%s-%d", s.Cluster, s.Card, i), s.Cluster, s.Card, p, last})
		}
	}
	return res
}

// TestCapacityRowsAreCardTypes: over the simulated store's own capacity view
// (eight hours: too little history for any forecast), the page has no row and
// names, as too little history, exactly the cluster and card types whose GPUs
// reported: never one for jobs that accept any card, never one no GPU of
// which reported. The simulated fleet has jobs that accept any card.
func TestCapacityRowsAreCardTypes(t *testing.T) {
	s := simStore(t)
	if n := sqlText(t, s, "SELECT count() FROM capacity WHERE card = ''"); n == "0" {
		t.Fatal("the simulated fleet has no job that accepts any card: the test proves nothing")
	}
	want := strings.Split(sqlText(t, s, `SELECT arrayStringConcat(arraySort(groupArray(k)), ', ') FROM (
    SELECT cluster || '/' || card AS k FROM capacity WHERE card != '' GROUP BY cluster, card HAVING sum(capacity_gpus) > 0)`), ", ")
	srv := testConsole(t, s, nil)
	code, body, _ := get(t, srv, "/capacity", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("/capacity: %d", code)
	}
	if rows := regexp.MustCompile(`<tr data-key=`).FindAllString(body, -1); len(rows) != 0 {
		t.Errorf("%d rows over eight hours of data: want none (three weeks to forecast)", len(rows))
	}
	m := regexp.MustCompile(`id="too-little-history">[^:]*: ([^<]*)\.</p>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page names no cluster and card type with too little history:\n%.3000s", body)
	}
	got := strings.Split(m[1], ", ")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("too little history: %v, want the card types that reported %v", got, want)
	}
}

// TestCapacityPageShowsForecast: over eight weeks of history, the page has a
// row per cluster and card type with three weeks of it, and names the one
// with ten days; a card type without a price has no cost (never 0), the
// A100s' inventory counts whole GPUs and MIG slices apart, and each row has
// its plan's why and its chart; the forecast used is named.
func TestCapacityPageShowsForecast(t *testing.T) {
	hs, _ := newHistoryStore(t)
	srv := testConsole(t, hs, nil)
	code, body, _ := get(t, srv, "/capacity", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("/capacity: %d\n%.2000s", code, body)
	}
	rows := capacityRows(t, body)
	var keys []string
	for k := range rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"c1/A100-40GB", "c1/H100-80GB", "c1/L40S-48GB", "c2/RTX-6000-48GB"}; !slices.Equal(keys, want) {
		t.Errorf("rows %v, want %v", keys, want)
	}
	if !strings.Contains(body, `id="too-little-history">Too little history to forecast (less than three weeks with GPUs): c2/H100-80GB.`) {
		t.Error("c2/H100-80GB (ten days) is not named as too little history")
	}
	// The forecast used is named: the model where it backtested better (the
	// L40S's steady growth), the naive one where it did not (the H100s' queue
	// repeats week by week).
	if l, h := rows["c1/L40S-48GB"], rows["c1/H100-80GB"]; l["method"] != capacity.MethodModel || h["method"] != capacity.MethodNaive {
		t.Errorf("forecast used: L40S %s (WAPE %s, naive %s), H100 %s (WAPE %s, naive %s); want %s and %s",
			l["method"], l["wape"], l["naive-wape"], h["method"], h["wape"], h["naive-wape"], capacity.MethodModel, capacity.MethodNaive)
	}
	if c := rows["c2/RTX-6000-48GB"]["cost"]; c != "–" {
		t.Errorf("the unpriced card's cost a month: %q, want – (no cost, never 0)", c)
	}
	if a := rows["c1/A100-40GB"]; a["whole"] != "4" || a["slices"] != "14" || a["gpu-eq"] != "6.00" {
		t.Errorf("A100 inventory: %s GPUs, %s MIG slices, %s GPU-eq; want 4, 14 and 6.00", a["whole"], a["slices"], a["gpu-eq"])
	}
	if n := strings.Count(body, "<figure>"); n != len(rows) {
		t.Errorf("%d charts for %d rows", n, len(rows))
	}
	for k := range rows {
		if !regexp.MustCompile(`<li data-key="` + regexp.QuoteMeta(k) + `">[^<]*\+[0-9]+ GPUs \([^)]+\): [^<]{10,}\.</li>`).MatchString(body) {
			t.Errorf("%s: no plan with its why", k)
		}
	}
}

var (
	capRowRe  = regexp.MustCompile(`(?s)<tr data-key="([^"]+)">(.*?)</tr>`)
	capCellRe = regexp.MustCompile(`(?s)<td class="(?:n )?([a-z0-9-]+)"[^>]*>(.*?)</td>`)
)

// capacityRows is the page's table: per cluster/card, its cells by class.
func capacityRows(t *testing.T, body string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, m := range capRowRe.FindAllStringSubmatch(tableHTML(body, "capacity"), -1) {
		cells := map[string]string{}
		for _, c := range capCellRe.FindAllStringSubmatch(m[2], -1) {
			cells[c[1]] = strings.TrimSpace(html.UnescapeString(c[2]))
		}
		out[m[1]] = cells
	}
	if len(out) == 0 {
		t.Fatalf("no capacity rows:\n%.3000s", body)
	}
	return out
}
