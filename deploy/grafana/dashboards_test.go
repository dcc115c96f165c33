package grafana

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// wantDashboards are the dashboards the README promises, by uid.
var wantDashboards = []string{"gpupool-findings", "gpupool-pool-overview", "gpupool-queue-wait", "gpupool-team-chargeback"}

func load(t *testing.T) []*Dashboard {
	t.Helper()
	ds, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestDashboardsWellFormed checks what Grafana needs to import a dashboard and
// what keeps them portable: a unique uid, unique panel ids, panels inside the
// 24-column grid, and every panel on one of the two datasource variables with
// queries of its kind.
func TestDashboardsWellFormed(t *testing.T) {
	var uids []string
	for _, d := range load(t) {
		t.Run(d.File, func(t *testing.T) {
			if d.UID == "" || d.Title == "" {
				t.Errorf("uid %q, title %q", d.UID, d.Title)
			}
			uids = append(uids, d.UID)
			vars := map[string]string{}
			for _, v := range d.Templating.List {
				vars[v.Name] = v.Type
			}
			if vars["DS_PROMETHEUS"] != "datasource" || vars["DS_CLICKHOUSE"] != "datasource" {
				t.Errorf("templating lacks the DS_PROMETHEUS and DS_CLICKHOUSE datasource variables: %v", vars)
			}
			ids := map[int]bool{}
			for _, p := range d.AllPanels() {
				if ids[p.ID] {
					t.Errorf("panel id %d used twice", p.ID)
				}
				ids[p.ID] = true
				if p.GridPos.W < 1 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H < 1 {
					t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
				}
				if p.Type == "row" {
					continue
				}
				if p.Title == "" || len(p.Targets) == 0 {
					t.Errorf("panel %d: title %q, %d queries", p.ID, p.Title, len(p.Targets))
				}
				checkDatasource(t, p.Title, p.Datasource)
				for _, tg := range p.Targets {
					checkDatasource(t, p.Title+"/"+tg.RefID, tg.Datasource)
					if tg.RefID == "" {
						t.Errorf("panel %q: a query without refId", p.Title)
					}
					if tg.Datasource == nil || p.Datasource == nil || *tg.Datasource != *p.Datasource {
						t.Errorf("panel %q: query %s on another datasource than its panel", p.Title, tg.RefID)
						continue
					}
					prom := tg.Datasource.Type == PrometheusType
					if prom && (tg.Expr == "" || tg.RawSQL != "") || !prom && (tg.RawSQL == "" || tg.Expr != "") {
						t.Errorf("panel %q: query %s on %s has expr %q and rawSql %q", p.Title, tg.RefID, tg.Datasource.Type, tg.Expr, tg.RawSQL)
					}
				}
			}
		})
	}
	slices.Sort(uids)
	if !slices.Equal(uids, wantDashboards) {
		t.Errorf("dashboards %v, want %v", uids, wantDashboards)
	}
}

func checkDatasource(t *testing.T, what string, ds *DatasourceRef) {
	t.Helper()
	switch {
	case ds == nil:
		t.Errorf("%s: no datasource", what)
	case ds.Type == PrometheusType && ds.UID == PrometheusUID, ds.Type == ClickHouseType && ds.UID == ClickHouseUID:
	default:
		t.Errorf("%s: datasource %+v: use {%q, %q} or {%q, %q}", what, *ds, PrometheusType, PrometheusUID, ClickHouseType, ClickHouseUID)
	}
}

// promQuery is one PromQL expression of a dashboard and where it is.
type promQuery struct{ where, expr string }

// sqlQuery is one ClickHouse query of a dashboard and where it is.
type sqlQuery struct{ where, sql string }

func queries(ds []*Dashboard) ([]promQuery, []sqlQuery) {
	var pq []promQuery
	var sq []sqlQuery
	for _, d := range ds {
		for _, p := range d.AllPanels() {
			for _, tg := range p.Targets {
				where := fmt.Sprintf("%s/%s/%s", d.File, p.Title, tg.RefID)
				if tg.Expr != "" {
					pq = append(pq, promQuery{where, tg.Expr})
				}
				if tg.RawSQL != "" {
					sq = append(sq, sqlQuery{where, tg.RawSQL})
				}
			}
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" || v.Datasource == nil {
				continue
			}
			where := fmt.Sprintf("%s/$%s", d.File, v.Name)
			switch v.Datasource.Type {
			case PrometheusType:
				pq = append(pq, promQuery{where, v.QueryText()})
			case ClickHouseType:
				sq = append(sq, sqlQuery{where, v.QueryText()})
			}
		}
	}
	return pq, sq
}

// targetLabels are labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance", "__name__"}

// metricsGolden lists every metric the components register, with its type and
// label names: internal/metricstest writes it from the components' registries and
// fails when it is stale, so reading it here checks the dashboards against the
// real set without importing every component into deploy's tests.
const metricsGolden = "../../internal/metricstest/testdata/metrics.golden"

// family is what a dashboard may rely on about one metric family.
type family struct {
	name, typ string
	labels    []string
}

// seriesNames are the names a query may use for f: the family itself, and for a
// histogram or summary its _bucket, _sum and _count series.
func (f family) seriesNames() []string {
	switch f.typ {
	case "histogram":
		return []string{f.name, f.name + "_bucket", f.name + "_sum", f.name + "_count"}
	case "summary":
		return []string{f.name, f.name + "_sum", f.name + "_count"}
	}
	return []string{f.name}
}

// readFamilies parses metricsGolden: "# TYPE <name> <type>" then "<name>{<labels>}".
func readFamilies(t *testing.T) map[string]family {
	t.Helper()
	data, err := os.ReadFile(metricsGolden)
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]family{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			fams[name] = family{name: name, typ: typ}
			continue
		}
		name, labels, ok := strings.Cut(line, "{")
		if f, known := fams[name]; ok && known {
			if labels = strings.TrimSuffix(labels, "}"); labels != "" {
				f.labels = strings.Split(labels, ",")
			}
			fams[name] = f
		}
	}
	if len(fams) == 0 {
		t.Fatalf("%s: no metric families", metricsGolden)
	}
	return fams
}

// TestPromQLNamesRegisteredMetrics checks every PromQL expression against the
// metrics the components register (metricsGolden): each metric it names exists,
// and each label it matches or groups by is a label of one of those metrics.
func TestPromQLNamesRegisteredMetrics(t *testing.T) {
	fams := readFamilies(t)
	series := map[string]family{}
	for _, f := range fams {
		for _, n := range f.seriesNames() {
			series[n] = f
		}
	}
	pq, _ := queries(load(t))
	if len(pq) == 0 {
		t.Fatal("no PromQL in the dashboards")
	}
	used := map[string]bool{}
	for _, q := range pq {
		refs := scanPromQL(q.expr)
		if len(refs.metrics) == 0 {
			t.Errorf("%s: no metric found in %q", q.where, q.expr)
		}
		labels := slices.Clone(targetLabels)
		for _, m := range refs.metrics {
			f, ok := series[m]
			if !ok {
				t.Errorf("%s: %s is not a metric any component registers (%q)", q.where, m, q.expr)
				continue
			}
			used[f.name] = true
			labels = append(labels, f.labels...)
			if f.typ == "histogram" && strings.HasSuffix(m, "_bucket") {
				labels = append(labels, "le")
			}
		}
		for _, l := range refs.labels {
			if !slices.Contains(labels, l) {
				t.Errorf("%s: label %q is not a label of %v (%q)", q.where, l, refs.metrics, q.expr)
			}
		}
	}
	t.Logf("dashboards use %d of %d gpupool metrics; not shown: %v", len(used), len(fams),
		slices.Sorted(func(yield func(string) bool) {
			for n := range maps.Keys(fams) {
				if !used[n] && !yield(n) {
					return
				}
			}
		}))
}

// TestClickHouseQueriesRun runs every ClickHouse query of the dashboards, macros
// expanded, with the variables at All and at one value, on an embedded database
// migrated with the real migrations: a view or column the dashboards use that
// the schema renames or drops fails here.
func TestClickHouseQueriesRun(t *testing.T) {
	_, sq := queries(load(t))
	if len(sq) == 0 {
		t.Fatal("no ClickHouse queries in the dashboards")
	}
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{DB: s.Database(), RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	for _, q := range sq {
		for _, m := range []varMode{varsAll, varsOne} {
			t.Run(q.where+"/"+m.String(), func(t *testing.T) {
				sql, err := expand(q.sql, m)
				if err != nil {
					t.Fatalf("expand: %v\n%s", err, q.sql)
				}
				if _, err := s.Query(t.Context(), sql, nil); err != nil {
					t.Errorf("%v\n%s", err, sql)
				}
			})
		}
	}
}
