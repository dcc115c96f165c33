package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestParseErrorAlone: a missing config file or an unknown flag is an error that
// names it, with no usage text printed (it used to come after 86 lines of usage).
func TestParseErrorAlone(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "/nonexistent/gpupool.yaml", "sql", "SELECT 1"}, "--config: stat /nonexistent/gpupool.yaml"},
		{[]string{"sql", "--bogus", "SELECT 1"}, "unknown flag --bogus"},
		{[]string{"nosuchcommand"}, `unexpected argument nosuchcommand`},
	} {
		var out bytes.Buffer
		var cli CLI
		_, err := newParser(&cli, kong.Writers(&out, &out), kong.Exit(func(int) { t.Fatal("the parser exited") })).Parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("%v: printed %q besides the error", tc.args, out.String())
		}
	}
}
