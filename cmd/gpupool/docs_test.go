package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/alecthomas/kong"
)

// repoRoot is the repository root seen from this package's directory.
const repoRoot = "../.."

// maxREADMELines is how long the README may grow: a front door, with the reference in docs/.
const maxREADMELines = 250

// makeFlagVars are the Makefile variables whose value is handed to a gpupool command
// ("./$(BIN) demo $(DEMO_FLAGS)"), so `make demo DEMO_FLAGS="…"` names that command's flags.
var makeFlagVars = map[string]string{"DEMO_FLAGS": "demo"}

// docFiles lists the README and the docs/ pages, relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", repoRoot, err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// TestDocs checks every command, flag, make target, link and repository path the
// README and docs/ name against the real command line, the Makefile and the tree.
func TestDocs(t *testing.T) {
	chk := newDocChecker(t)
	for _, f := range docFiles(t) {
		t.Run(f, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(repoRoot, f))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range chk.check(f, string(raw)) {
				t.Error(p)
			}
		})
	}
}

// TestDocsFrontDoor keeps the README short and every docs/ page linked from it.
func TestDocsFrontDoor(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	if n := strings.Count(readme, "\n"); n > maxREADMELines {
		t.Errorf("README.md has %d lines, more than %d: move reference text to docs/", n, maxREADMELines)
	}
	linked := map[string]bool{}
	for _, l := range markdownLinks(stripCode(stripBlocks(readme))) {
		target, _, _ := strings.Cut(l.target, "#")
		linked[filepath.ToSlash(filepath.Clean(target))] = true
	}
	for _, f := range docFiles(t)[1:] {
		if !linked[f] {
			t.Errorf("README.md does not link %s", f)
		}
	}
}

// TestDocsCheckerReports shows the checker catches what it is for: each case is a
// made-up or misplaced name, and the last one names only things that exist.
func TestDocsCheckerReports(t *testing.T) {
	chk := newDocChecker(t)
	cases := []struct {
		name, md string
		want     []string // substrings of the problems, one each; none: no problem
	}{
		{"made-up command", "```sh\ngpupool frobnicate --now\n```\n", []string{`unknown command "frobnicate"`}},
		{"made-up subcommand", "Run `gpupool queue rm dev`.\n", []string{`unknown command "rm"`}},
		{"made-up flag", "Run `bin/gpupool demo --frobnicate 3`.\n", []string{"unknown flag --frobnicate"}},
		{"another command's flag", "```sh\ngpupool -c x.yaml ingest \\\n  --duration 1h\n```\n", []string{"gpupool ingest: unknown flag --duration"}},
		{"made-up short flag", "`gpupool sql -z \"SELECT 1\"`\n", []string{"unknown flag -z"}},
		{"unexpected argument", "`gpupool ingest now`\n", []string{`unexpected argument "now"`}},
		{"made-up make target", "Run `make frobnicate`.\n", []string{`no make target "frobnicate"`}},
		{"made-up flag through make", "`make demo DEMO_FLAGS=\"--frobnicate\"`\n", []string{"gpupool demo: unknown flag --frobnicate"}},
		{"loose flag of no command", "With `--frobnicate` set.\n", []string{"no gpupool command has a flag --frobnicate"}},
		{"broken link", "See [the guide](docs/nope.md).\n", []string{"link docs/nope.md"}},
		{"broken anchor", "# Title\n\nSee [below](#nowhere).\n", []string{`no heading for #nowhere`}},
		{"missing repository path", "Tested in `collector/frobnicate_test.go`.\n", []string{"collector/frobnicate_test.go: no such file"}},
		{"valid", "# Valid names\n\n```sh\n" +
			"GPUPOOL_CHDB_LIB=/x bin/gpupool -c x.yaml --nats-url nats://a:4222 collector --source sim --speed 0 --record t.jsonl.gz | head  # a comment --frobnicate\n" +
			"bin/gpupool report run --period \"$(date -u -d yesterday +%F)\" -f html,csv -o out/ > log.txt 2>&1\n" +
			"make demo DEMO_FLAGS=\"--duration 72h --speed 0\" && FUZZTIME=1m make fuzz\n```\n" +
			"`gpupool <command> --help`, `gpupool pricebook load deploy/price_book.example.csv`, `--serve`, " +
			"[this](#valid-names), [finance](docs/finance.md#finance-views), `ingest/*_test.go`, `collector/agent.Send`.\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := chk.check("README.md", tc.md)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q does not say %q", got[i], w)
				}
			}
		})
	}
}

// docChecker knows what exists: the command tree, the make targets and the tree of files.
type docChecker struct {
	app      *kong.Node
	flags    map[string]bool // every long flag of any command
	targets  map[string]bool
	topLevel map[string]bool // the repository's top-level folders
}

// newDocChecker reads the command tree of the real CLI, the Makefile's targets and
// the repository's top-level folders.
func newDocChecker(t *testing.T) *docChecker {
	t.Helper()
	var cli CLI
	p, err := kong.New(&cli, kong.Name("gpupool"))
	if err != nil {
		t.Fatal(err)
	}
	c := &docChecker{app: p.Model.Node, flags: map[string]bool{}, targets: map[string]bool{}, topLevel: map[string]bool{}}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			c.flags[f.Name] = true
		}
		for _, ch := range n.Children {
			walk(ch)
		}
	}
	walk(c.app)
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+)[ \t]*:(?:[^=]|$)`).FindAllStringSubmatch(string(mk), -1) {
		c.targets[m[1]] = true
	}
	// The folders git tracks: a local run's gpupool-data/ or bin/ is no part of
	// the repository a reader clones.
	out, err := exec.Command("git", "-C", repoRoot, "ls-files").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for path := range strings.Lines(string(out)) {
		if dir, _, ok := strings.Cut(path, "/"); ok && !strings.HasPrefix(dir, ".") {
			c.topLevel[dir] = true
		}
	}
	return c
}

// check returns the problems of one markdown file, file being its path from the
// repository root (links are resolved from its folder).
func (c *docChecker) check(file, md string) []string {
	var out []string
	report := func(line int, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s:%d: %s", file, line, fmt.Sprintf(format, args...)))
	}
	for _, b := range codeBlocks(md) {
		if !slices.Contains([]string{"sh", "bash", "shell", "console"}, b.lang) {
			continue
		}
		cmds, err := shellCommands(b.text)
		if err != nil {
			report(b.line, "code block: %v", err)
			continue
		}
		for _, cmd := range cmds {
			for _, p := range c.checkCommand(cmd.words, false) {
				report(b.line+1+cmd.line, "%s", p)
			}
		}
	}
	prose := stripBlocks(md)
	for _, s := range inlineCode(prose) {
		if !commandLike(s.text) {
			if p := c.checkPath(s.text); p != "" {
				report(s.line, "%s", p)
			}
			continue
		}
		cmds, err := shellCommands(s.text)
		if err != nil {
			report(s.line, "`%s`: %v", s.text, err)
			continue
		}
		for _, cmd := range cmds {
			for _, p := range c.checkCommand(cmd.words, true) {
				report(s.line, "%s", p)
			}
		}
	}
	for _, l := range markdownLinks(stripCode(prose)) {
		if p := checkLink(file, md, l.target); p != "" {
			report(l.line, "%s", p)
		}
	}
	return out
}

// commandLike says whether an inline code span is a command line to check rather
// than a name or a path.
func commandLike(s string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	return first == "make" || isGpupool(first) || strings.HasPrefix(first, "--") ||
		(strings.Contains(first, "=") && strings.Contains(s, " "))
}

// isGpupool says whether a command word runs the gpupool binary (gpupool, bin/gpupool, …).
func isGpupool(word string) bool { return word == "gpupool" || strings.HasSuffix(word, "/gpupool") }

var envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// checkCommand checks one simple command: gpupool's, make's, or (inline only) a
// lone list of flags, each of which must be a flag of some gpupool command.
func (c *docChecker) checkCommand(words []string, inline bool) []string {
	for len(words) > 0 && envAssign.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil
	}
	switch {
	case isGpupool(words[0]):
		return c.checkGpupool(words[1:])
	case words[0] == "make":
		return c.checkMake(words[1:])
	case inline && strings.HasPrefix(words[0], "--"):
		var out []string
		for _, w := range words {
			name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
			if strings.HasPrefix(w, "--") && !c.flags[name] {
				out = append(out, fmt.Sprintf("no gpupool command has a flag --%s", name))
			}
		}
		return out
	}
	return nil
}

// checkMake checks make's targets, and the gpupool flags passed through its variables.
func (c *docChecker) checkMake(words []string) []string {
	var out []string
	for _, w := range words {
		if name, val, ok := strings.Cut(w, "="); ok && envAssign.MatchString(w) {
			if cmd, ok := makeFlagVars[name]; ok {
				args := strings.Fields(val)
				out = append(out, c.checkGpupool(append([]string{cmd}, args...))...)
			}
			continue
		}
		if strings.HasPrefix(w, "-") || isPlaceholder(w) {
			continue
		}
		if !c.targets[w] {
			out = append(out, fmt.Sprintf("no make target %q in the Makefile", w))
		}
	}
	return out
}

// isPlaceholder says whether a word stands for something the reader fills in.
func isPlaceholder(w string) bool { return strings.ContainsAny(w, "<…") }

// checkGpupool walks gpupool's arguments down the command tree: every word is a
// subcommand, a flag of the command reached (or of one above it), a flag's value or
// one of the command's positional arguments.
func (c *docChecker) checkGpupool(args []string) []string {
	node, path := c.app, "gpupool"
	positional := 0
	var out []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		if isPlaceholder(w) || w == "--" {
			return out
		}
		if strings.HasPrefix(w, "-") && len(w) > 1 {
			known, takesValue, name := findFlag(node, w)
			if !known { // whether a value follows is unknown: the rest cannot be read
				return append(out, fmt.Sprintf("%s: unknown flag %s", path, name))
			}
			if takesValue {
				i++ // the flag's value
			}
			continue
		}
		if positional == 0 {
			if child := findChild(node, w); child != nil {
				node, path = child, path+" "+w
				continue
			}
			if len(node.Children) > 0 {
				return append(out, fmt.Sprintf("%s: unknown command %q", path, w))
			}
		}
		n := len(node.Positional)
		if positional >= n && (n == 0 || !node.Positional[n-1].IsCumulative()) {
			return append(out, fmt.Sprintf("%s: unexpected argument %q", path, w))
		}
		positional++
	}
	return out
}

// findFlag looks a flag word (--name, --name=value, -x, -xvalue) up among the flags
// of node and of the commands above it (kong's --help and -h included), and says
// whether the next word is its value.
func findFlag(node *kong.Node, word string) (known, takesValue bool, name string) {
	long, isLong := strings.CutPrefix(word, "--")
	long, _, inline := strings.Cut(long, "=")
	name = "--" + long
	if !isLong {
		name, inline = word[:2], len(word) > 2
	}
	if name == "--help" || name == "-h" {
		return true, false, name
	}
	for n := node; n != nil; n = n.Parent {
		for _, f := range n.Flags {
			if isLong && (f.Name == long || slices.Contains(f.Aliases, long)) || !isLong && f.Short == rune(word[1]) {
				return true, !inline && !f.IsBool() && !f.IsCounter(), name
			}
		}
	}
	return false, false, name
}

// findChild is node's subcommand called name (or aliased so), or nil.
func findChild(node *kong.Node, name string) *kong.Node {
	for _, ch := range node.Children {
		if ch.Type == kong.CommandNode && (ch.Name == name || slices.Contains(ch.Aliases, name)) {
			return ch
		}
	}
	return nil
}

// checkPath checks an inline code span that names a path in the repository (its
// first segment is a top-level folder): a file, a folder, a glob, or a Go
// identifier in a package (`collector/agent.Send`).
func (c *docChecker) checkPath(s string) string {
	first, _, ok := strings.Cut(s, "/")
	if !ok || !c.topLevel[first] || strings.ContainsAny(s, " <>{}$…`'\"") {
		return ""
	}
	p := filepath.Join(repoRoot, filepath.FromSlash(s))
	if m, err := filepath.Glob(p); err == nil && len(m) > 0 {
		return ""
	}
	if dir, ident, ok := cutLast(p, "."); ok && ident != "" && unicode.IsUpper(rune(ident[0])) {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return ""
		}
	}
	return fmt.Sprintf("%s: no such file or folder in the repository", s)
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// checkLink checks a relative link from file: the file exists and, for a markdown
// file, the #anchor is one of its headings.
func checkLink(file, md, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	doc := md
	if path != "" {
		full := filepath.Join(repoRoot, filepath.Dir(file), filepath.FromSlash(path))
		if _, err := os.Stat(full); err != nil {
			return fmt.Sprintf("link %s: no such file (%s from the repository root)", target, filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path))))
		}
		if anchor == "" || !strings.HasSuffix(path, ".md") {
			return ""
		}
		raw, err := os.ReadFile(full)
		if err != nil {
			return fmt.Sprintf("link %s: %v", target, err)
		}
		doc = string(raw)
	}
	if anchor != "" && !slices.Contains(headingSlugs(doc), anchor) {
		return fmt.Sprintf("link %s: no heading for #%s", target, anchor)
	}
	return ""
}

// headingSlugs are the anchors GitHub gives a markdown file's headings.
func headingSlugs(md string) []string {
	var out []string
	for _, line := range strings.Split(stripBlocks(md), "\n") {
		h, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		h = strings.TrimLeft(h, "#")
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		out = append(out, b.String())
	}
	return out
}

// snippet is a piece of a markdown file and the line it starts on.
type snippet struct {
	line       int
	lang, text string
}

// codeBlocks returns the fenced code blocks of md with their info string.
func codeBlocks(md string) []snippet {
	var out []snippet
	var cur *snippet
	for i, line := range strings.Split(md, "\n") {
		fence, isFence := strings.CutPrefix(strings.TrimSpace(line), "```")
		switch {
		case isFence && cur == nil:
			cur = &snippet{line: i + 1, lang: strings.TrimSpace(fence)}
		case isFence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// stripBlocks blanks the fenced code blocks of md, keeping its line numbers.
func stripBlocks(md string) string {
	lines := strings.Split(md, "\n")
	in := false
	for i, line := range lines {
		isFence := strings.HasPrefix(strings.TrimSpace(line), "```")
		if in || isFence {
			lines[i] = ""
		}
		if isFence {
			in = !in
		}
	}
	return strings.Join(lines, "\n")
}

var inlineSpan = regexp.MustCompile("`([^`]+)`")

// inlineCode returns the inline code spans of prose (which may run over a line
// break, read as a space).
func inlineCode(prose string) []snippet {
	var out []snippet
	for _, m := range inlineSpan.FindAllStringSubmatchIndex(prose, -1) {
		text := strings.ReplaceAll(prose[m[2]:m[3]], "\n", " ")
		out = append(out, snippet{line: 1 + strings.Count(prose[:m[0]], "\n"), text: strings.TrimSpace(text)})
	}
	return out
}

// stripCode blanks the inline code spans of prose, keeping its line numbers.
func stripCode(prose string) string {
	return inlineSpan.ReplaceAllStringFunc(prose, func(s string) string {
		return strings.Repeat("\n", strings.Count(s, "\n"))
	})
}

// link is a markdown link's target and its line.
type link struct {
	line   int
	target string
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// markdownLinks returns the targets of the [text](target) links of prose.
func markdownLinks(prose string) []link {
	var out []link
	for _, m := range mdLink.FindAllStringSubmatchIndex(prose, -1) {
		out = append(out, link{line: 1 + strings.Count(prose[:m[0]], "\n"), target: prose[m[2]:m[3]]})
	}
	return out
}

// errUnclosed is a quote or $( that a code snippet never closes.
var errUnclosed = errors.New("unclosed quote or $(")

// shellCmd is one simple command of a shell snippet: its words, and the line of the
// snippet it starts on, counted from 0.
type shellCmd struct {
	line  int
	words []string
}

// shellCommands splits a shell snippet into its simple commands (at newlines, ;, &,
// | and their doubles), each a list of words with quotes removed. Comments are
// dropped, a backslash-newline continues the line, $(…) stays one word, <name> is
// a placeholder word, and redirections are dropped with their file.
func shellCommands(s string) ([]shellCmd, error) {
	var cmds []shellCmd
	var words []string
	line, start := 0, 0
	var cur strings.Builder
	inWord, skipNext := false, false
	endWord := func() {
		if inWord {
			if !skipNext {
				words = append(words, cur.String())
			}
			skipNext = false
		}
		cur.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, shellCmd{line: start, words: words})
		}
		words = nil
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if len(words) == 0 && !inWord {
			start = line
		}
		if ch == '\n' || ch == '\\' && i+1 < len(s) && s[i+1] == '\n' {
			line++
		}
		switch {
		case ch == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		case ch == '\'' || ch == '"':
			j := strings.IndexByte(s[i+1:], ch)
			if j < 0 {
				return nil, errUnclosed
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '$' && i+1 < len(s) && s[i+1] == '(':
			j := closingParen(s, i+1)
			if j < 0 {
				return nil, errUnclosed
			}
			cur.WriteString(s[i : j+1])
			inWord = true
			i = j
		case ch == '#' && !inWord:
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case ch == '<' && i+1 < len(s) && unicode.IsLetter(rune(s[i+1])) && strings.IndexByte(s[i:], '>') > 0:
			j := strings.IndexByte(s[i:], '>')
			cur.WriteString(s[i : i+j+1])
			inWord = true
			i += j
		case ch == '>' || ch == '<':
			if cur.String() == "1" || cur.String() == "2" {
				cur.Reset()
				inWord = false
			}
			endWord()
			for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '&') {
				i++
			}
			if s[i] == '&' { // 2>&1: no file follows
				for i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
					i++
				}
				continue
			}
			skipNext = true
		case ch == '\n' || ch == ';' || ch == '&' || ch == '|':
			endCmd()
		case ch == ' ' || ch == '\t':
			endWord()
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	endCmd()
	return cmds, nil
}

// closingParen returns the index of the ) closing the ( at open, or -1.
func closingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
