package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzLoadConfig: any file given as the configuration is read without a panic,
// and is either accepted or refused with errors that say where: a YAML error
// names its line, and each line of a validation error starts with the key's
// path ("scheduler.queues[0].name: …").
func FuzzLoadConfig(f *testing.F) {
	for _, s := range []string{
		"", "ingest:\n  batch_rowz: 5\n", "ingest:\n  batch_rows: lots\n", "bus:\n  streams:\n    replicas: 9\n",
		"scheduler:\n  queues:\n    - {name: q, pool: dev, quota: {B200: {nominal: 1}}}\n",
		"scheduler:\n  queues:\n    - {name: \"a b\", pool: dev}\n", "analyzer:\n  findings:\n    pools:\n      dev:\n        idle: {window: -1m}\n",
		"a: &a [*a, *a]\n", "sim:\n  tick: 9223372036854775807s\n", "demo:\n  speed: .nan\n", "- 1\n- 2\n", "ingest: [1, 2\n",
	} {
		f.Add([]byte(s))
	}
	if ex, err := os.ReadFile("../../deploy/gpupool.example.yaml"); err == nil {
		f.Add(ex)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Default()
		if err := Parse(data, &c); err != nil {
			if msg := err.Error(); !strings.Contains(msg, "line ") && !strings.Contains(msg, "yaml") {
				t.Fatalf("parse error without a line: %q", msg)
			}
			return
		}
		err := c.Finish("")
		if err == nil {
			return
		}
		msg := strings.TrimPrefix(err.Error(), "config:\n")
		for _, line := range strings.Split(msg, "\n") {
			key, _, ok := strings.Cut(line, ": ")
			if !ok || key == "" || strings.ContainsAny(key, " \t") {
				t.Fatalf("error line %q does not start with the key's path (in %q)", line, msg)
			}
		}
	})
}
