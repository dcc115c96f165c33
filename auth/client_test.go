package auth

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClientToken: --token-file, then GPUPOOL_TOKEN, then the default file if
// readable, else none.
func TestClientToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flag, def := write("flag.token", "from-flag\n", 0o600), write("admin.token", " from-default\n", 0o600)
	empty, missing := write("empty.token", "\n", 0o600), filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name, file, env, def, want string
		err                        bool
	}{
		{"flag first", flag, "from-env", def, "from-flag", false},
		{"env next", "", "from-env", def, "from-env", false},
		{"default last", "", "", def, "from-default", false},
		{"no default", "", "", missing, "", false},
		{"nothing", "", "", "", "", false},
		{"missing flag file", missing, "from-env", def, "", true},
		{"empty flag file", empty, "", def, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ClientToken(tc.file, tc.env, tc.def)
			if got != tc.want || (err != nil) != tc.err {
				t.Fatalf("ClientToken = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}
