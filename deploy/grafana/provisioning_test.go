package grafana

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestProvisioning parses the provisioning files: one file provider, and a
// datasource of each type the dashboards' datasource variables select.
func TestProvisioning(t *testing.T) {
	var dash struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type string
			Options    struct{ Path string }
		}
	}
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, UID string
		}
	}
	for file, v := range map[string]any{
		"provisioning/dashboards/gpupool.yaml":  &dash,
		"provisioning/datasources/gpupool.yaml": &ds,
	} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if dash.APIVersion != 1 || len(dash.Providers) != 1 || dash.Providers[0].Type != "file" || dash.Providers[0].Options.Path == "" {
		t.Errorf("dashboard provider: %+v", dash)
	}
	var types []string
	for _, d := range ds.Datasources {
		types = append(types, d.Type)
	}
	if ds.APIVersion != 1 || !slices.Contains(types, PrometheusType) || !slices.Contains(types, ClickHouseType) {
		t.Errorf("datasources %v: want one %s and one %s", types, PrometheusType, ClickHouseType)
	}
}
