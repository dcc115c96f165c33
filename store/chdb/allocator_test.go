package chdb_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestAllocatorArenas checks that Config.Arenas reaches the engine's allocator:
// it is read once, when the library loads, so a child process opens the store
// (with the variable unset, and with an operator's own value, which wins) and
// prints the allocator's options as the engine reports them.
func TestAllocatorArenas(t *testing.T) {
	if os.Getenv("GPUPOOL_TEST_ARENAS_CHILD") != "" {
		arenasChild(t)
		return
	}
	tests := []struct {
		name, env string
		want      []string
	}{
		{"from the config", "", []string{"opt.narenas: 1\n", `opt.percpu_arena: "disabled"`}},
		{"the operator's value wins", "narenas:2", []string{"opt.narenas: 2\n", `opt.percpu_arena: "percpu"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := append(os.Environ(), "GPUPOOL_TEST_ARENAS_CHILD=1", "GPUPOOL_TEST_ARENAS_DIR="+t.TempDir())
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "JE_MALLOC_CONF=") })
			if tt.env != "" {
				env = append(env, "JE_MALLOC_CONF="+tt.env)
			}
			out := runChild(t, "TestAllocatorArenas", env)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the engine's allocator options lack %q:\n%s", w, grepLines(out, "opt.narenas", "opt.percpu_arena", "MALLOC_CONF"))
				}
			}
		})
	}
}

// runChild runs the test binary's test name alone in a child process with env
// (engine settings read once per process need a process of their own) and
// returns its output; the child failing fails t.
func runChild(t *testing.T, name string, env []string) string {
	t.Helper()
	return runChildOf(t, os.Args[0], name, env)
}

// runChildOf is runChild with the test binary at bin.
func runChildOf(t *testing.T, bin, name string, env []string) string {
	t.Helper()
	cmd := exec.Command(bin, "-test.run", "^"+name+"$", "-test.v")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", name, err, out)
	}
	return string(out)
}

func arenasChild(t *testing.T) {
	cfg := chdbtest.Config(t)
	cfg.Path = os.Getenv("GPUPOOL_TEST_ARENAS_DIR")
	cfg.Arenas = 1
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Query(t.Context(), "SELECT * FROM system.jemalloc_stats", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		for _, v := range row {
			fmt.Println(v)
		}
	}
}

func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestServerSettings checks that the per-process settings a Config asks for reach the
// engine as it runs (system.server_settings): they are read once per process, so
// a child process opens the store with LeanConfig's values and prints them.
func TestServerSettings(t *testing.T) {
	if os.Getenv("GPUPOOL_TEST_SETTINGS_CHILD") != "" {
		settingsChild(t)
		return
	}
	env := append(os.Environ(), "GPUPOOL_TEST_SETTINGS_CHILD=1", "GPUPOOL_TEST_SETTINGS_DIR="+t.TempDir())
	out := runChild(t, "TestServerSettings", env)
	lean := chdb.LeanConfig()
	for _, w := range []string{
		fmt.Sprintf("setting max_server_memory_usage=%d\n", int64(lean.MemoryLimitMiB)<<20),
		fmt.Sprintf("setting mark_cache_size=%d\n", int64(lean.MarkCacheMiB)<<20),
		fmt.Sprintf("setting background_pool_size=%d\n", lean.MergeThreads),
		"setting background_merges_mutations_concurrency_ratio=1\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the engine's settings lack %q:\n%s", strings.TrimSpace(w), grepLines(out, "setting "))
		}
	}
}

func settingsChild(t *testing.T) {
	cfg, lean := chdbtest.Config(t), chdb.LeanConfig()
	cfg.Path = os.Getenv("GPUPOOL_TEST_SETTINGS_DIR")
	cfg.MemoryLimitMiB, cfg.MarkCacheMiB, cfg.MergeThreads = lean.MemoryLimitMiB, lean.MarkCacheMiB, lean.MergeThreads
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Query(t.Context(), "SELECT name, value FROM system.server_settings WHERE name IN "+
		"('max_server_memory_usage', 'mark_cache_size', 'background_pool_size', 'background_merges_mutations_concurrency_ratio')", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Rows {
		name, _ := res.String(i, "name")
		value, _ := res.String(i, "value")
		fmt.Printf("setting %s=%s\n", name, value)
	}
}
