package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"go.yaml.in/yaml/v3"
)

// chartRenders are the Helm chart's renders that deploy/helm's tests keep
// up to date (go test ./deploy/helm -update).
var chartRenders = []string{"../../deploy/helm/testdata/default.yaml", "../../deploy/helm/testdata/large.yaml"}

// TestChartRunsTheRealBinary checks that what the Helm chart runs is this binary's
// command line and configuration: every gpupool container's arguments parse (each
// flag and subcommand exists), and the configuration file the chart renders loads
// and validates (every key exists, every value is valid), as the pods would do.
func TestChartRunsTheRealBinary(t *testing.T) {
	for _, render := range chartRenders {
		t.Run(filepath.Base(render), func(t *testing.T) {
			data, err := os.ReadFile(render)
			if err != nil {
				t.Fatal(err)
			}
			var docs []map[string]any
			dec := yaml.NewDecoder(bytes.NewReader(data))
			for {
				var d map[string]any
				if err := dec.Decode(&d); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				if d != nil {
					docs = append(docs, d)
				}
			}
			cfgPath := filepath.Join(t.TempDir(), "gpupool.yaml")
			var containers int
			for _, d := range docs {
				if d["kind"] == "ConfigMap" && name(d) == "gpupool-config" {
					text := d["data"].(map[string]any)["gpupool.yaml"].(string)
					if err := os.WriteFile(cfgPath, []byte(text), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := os.Stat(cfgPath); err != nil {
				t.Fatal("no gpupool-config ConfigMap in the render")
			}
			for _, d := range docs {
				spec := dig(d, "spec", "template", "spec")
				if spec == nil {
					continue
				}
				for _, c := range spec["containers"].([]any) {
					c := c.(map[string]any)
					if !strings.Contains(c["image"].(string), "gpupool") {
						continue
					}
					var args []string
					for _, a := range c["args"].([]any) {
						s := strings.ReplaceAll(a.(string), "$(NODE_NAME)", "gpu-node-1")
						if s == "/etc/gpupool/config/gpupool.yaml" {
							s = cfgPath
						}
						args = append(args, s)
					}
					containers++
					where := d["kind"].(string) + " " + name(d) + ": " + strings.Join(args, " ")
					var cli CLI
					var out bytes.Buffer
					if _, err := newParser(&cli, kong.Writers(&out, &out), kong.Exit(func(int) { t.Fatalf("%s: the parser exited", where) })).Parse(args); err != nil {
						t.Errorf("%s: %v", where, err)
						continue
					}
					c2, err := cli.loadConfig()
					if err == nil {
						err = c2.Finish(cfgPath)
					}
					if err != nil {
						t.Errorf("%s: %v", where, err)
					}
				}
			}
			if containers < 5 {
				t.Errorf("%d gpupool containers in %s, want every component's", containers, render)
			}
		})
	}
}

func name(d map[string]any) string {
	s, _ := dig(d, "metadata")["name"].(string)
	return s
}

func dig(v map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := v[k].(map[string]any)
		if !ok {
			return nil
		}
		v = next
	}
	return v
}
