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
			cmd := exec.Command(os.Args[0], "-test.run", "^TestAllocatorArenas$", "-test.v")
			cmd.Env = append(os.Environ(), "GPUPOOL_TEST_ARENAS_CHILD=1", "GPUPOOL_TEST_ARENAS_DIR="+t.TempDir())
			cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "JE_MALLOC_CONF=") })
			if tt.env != "" {
				cmd.Env = append(cmd.Env, "JE_MALLOC_CONF="+tt.env)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the engine's allocator options lack %q:\n%s", w, grepLines(string(out), "opt.narenas", "opt.percpu_arena", "MALLOC_CONF"))
				}
			}
		})
	}
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
