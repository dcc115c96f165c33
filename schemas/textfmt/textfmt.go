// Package textfmt lays out text for a terminal: what every command that prints
// sentences beside tables (the demo's summary, the capacity report) keeps within
// its width.
package textfmt

import "strings"

// Wrap breaks s at spaces into lines of at most width columns (runes); a word
// longer than width stays whole, and the lines s already has are kept. indent
// starts every line after the first of a paragraph.
func Wrap(s string, width int, indent string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		cur := ""
		for _, w := range strings.Fields(line) {
			switch {
			case cur == "":
				cur = w
			case len([]rune(cur))+1+len([]rune(w)) > width:
				out = append(out, cur)
				cur = indent + w
			default:
				cur += " " + w
			}
		}
		out = append(out, cur)
	}
	return strings.Join(out, "\n")
}
