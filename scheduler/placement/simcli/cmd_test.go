package simcli

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestCmd prints the driver's name once before the error and exits with the
// status of its kind.
func TestCmd(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(Cmd, error)
		err  error
		code int
		want string
	}{
		{"fail", Cmd.Fail, io.ErrUnexpectedEOF, ExitFailed, "frag: unexpected EOF\n"},
		{"usage", Cmd.Usage, io.ErrUnexpectedEOF, ExitUsage, "frag: unexpected EOF\n"},
		{"the name once", Cmd.Fail, errors.New("frag: read trace: no nodes"), ExitFailed, "frag: read trace: no nodes\n"},
		{"another prefix", Cmd.Usage, errors.New("fragment: odd"), ExitUsage, "frag: fragment: odd\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := -1
			tc.call(Cmd{Name: "frag", Stderr: &out, Exit: func(c int) { code = c }}, tc.err)
			if got := out.String(); got != tc.want || code != tc.code {
				t.Fatalf("printed %q, exited %d; want %q, %d", got, code, tc.want, tc.code)
			}
		})
	}
}
