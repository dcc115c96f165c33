package simcli

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseLists feeds the list parsers arbitrary text: they never panic, an
// accepted list has one item per comma-separated part, and a list written back
// with String parses to the same values.
func FuzzParseLists(f *testing.F) {
	for _, s := range []string{"1", "1,2,3", " 4 , 5", "", ",", "1,,2", "x", "-1", "0.75,0.9", "1e400", "NaN", "fifo,reserve", "18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts := strings.Count(s, ",") + 1
		if u, err := ParseUints(s); err == nil {
			again, err := ParseUints((*Uints)(&u).String())
			if len(u) != parts || err != nil || !slices.Equal(again, u) {
				t.Fatalf("ParseUints(%q) = %v; written back and read: %v, %v", s, u, again, err)
			}
		}
		if v, err := ParseFloats(s); err == nil {
			again, err := ParseFloats((*Floats)(&v).String())
			if len(v) != parts || err != nil || !slices.Equal(again, v) {
				t.Fatalf("ParseFloats(%q) = %v; written back and read: %v, %v", s, v, again, err)
			}
		}
		allowed := []string{"fifo", "reserve"}
		if n, err := ParseNames(s, allowed); err == nil {
			for _, name := range n {
				if !slices.Contains(allowed, name) {
					t.Fatalf("ParseNames(%q) accepted %q", s, name)
				}
			}
			if len(n) != parts {
				t.Fatalf("ParseNames(%q) = %v: %d items, want %d", s, n, len(n), parts)
			}
		}
		if n, err := ParseNames(s, nil); err == nil {
			for _, name := range n {
				if name == "" || name != strings.TrimSpace(name) || strings.Contains(name, ",") {
					t.Fatalf("ParseNames(%q) gave the name %q", s, name)
				}
			}
		}
	})
}
