package textfmt

import "testing"

// TestWrap: Wrap breaks at spaces within the width, keeps a longer word whole
// and the lines it was given, and indents the lines it makes.
func TestWrap(t *testing.T) {
	for _, tc := range []struct{ in, indent, want string }{
		{"a bb ccc dddd", "", "a bb\nccc\ndddd"},
		{"short", "", "short"},
		{"averyveryverylongword x", "", "averyveryverylongword\nx"},
		{"kept\nlines", "", "kept\nlines"},
		{"a bb ccc dd", "  ", "a bb\n  ccc\n  dd"},
		{"é é é é", "", "é é é\né"},
	} {
		if got := Wrap(tc.in, 5, tc.indent); got != tc.want {
			t.Errorf("Wrap(%q, 5, %q) = %q, want %q", tc.in, tc.indent, got, tc.want)
		}
	}
}
