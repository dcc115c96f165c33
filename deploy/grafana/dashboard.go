package grafana

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
)

// Files are the dashboards, as Grafana imports or provisions them.
//
//go:embed dashboards/*.json
var Files embed.FS

// Datasource types the dashboards use, and the datasource variables panels name
// them by (the uid of a panel's datasource).
const (
	PrometheusType = "prometheus"
	ClickHouseType = "grafana-clickhouse-datasource"
	PrometheusUID  = "${DS_PROMETHEUS}"
	ClickHouseUID  = "${DS_CLICKHOUSE}"
)

// Dashboard is the part of a dashboard's JSON the checks read.
type Dashboard struct {
	File       string `json:"-"`
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Panels     []Panel
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel; a row holds its collapsed panels.
type Panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *DatasourceRef `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// DatasourceRef names a datasource by type and uid.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel: PromQL in Expr, or ClickHouse SQL in RawSQL.
type Target struct {
	RefID      string         `json:"refId"`
	Datasource *DatasourceRef `json:"datasource"`
	Expr       string         `json:"expr"`
	RawSQL     string         `json:"rawSql"`
}

// Variable is a template variable. Query is a string or, for Prometheus query
// variables, an object with a query field.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Datasource *DatasourceRef  `json:"datasource"`
	Query      json.RawMessage `json:"query"`
}

// QueryText returns the variable's query.
func (v Variable) QueryText() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &o)
	return o.Query
}

// AllPanels returns the dashboard's panels, those inside rows included.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Load parses every dashboard in Files, sorted by file name.
func Load() ([]*Dashboard, error) {
	names, err := fs.Glob(Files, "dashboards/*.json")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []*Dashboard
	for _, name := range names {
		raw, err := Files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		d := &Dashboard{File: path.Base(name)}
		if err := json.Unmarshal(raw, d); err != nil {
			return nil, fmt.Errorf("grafana: %s: %w", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}
