package store

import (
	"fmt"
	"regexp"
	"strings"
)

// tokenKind is the class of a lexed SQL token.
type tokenKind int

const (
	tokWord   tokenKind = iota // a bare word: keyword or identifier
	tokQuoted                  // a quoted identifier, "x" or `x`, unquoted in text
	tokString                  // a string literal (its text is not kept)
	tokNumber                  // a number literal
	tokPunct                   // an operator or punctuation, one or more characters
)

// token is one lexed token; text is the word, the unquoted identifier, or the
// operator. pos is its byte offset in the statement, for error messages.
type token struct {
	kind tokenKind
	text string
	pos  int
}

// is reports whether t is the bare word w (keywords are case-insensitive).
func (t token) is(w string) bool { return t.kind == tokWord && strings.EqualFold(t.text, w) }

// isPunct reports whether t is the operator p.
func (t token) isPunct(p string) bool { return t.kind == tokPunct && t.text == p }

// isName reports whether t can name a function, table or database.
func (t token) isName() bool { return t.kind == tokWord || t.kind == tokQuoted }

// numberRE is a number as the read-only check accepts it: decimal (with
// underscores, a fraction and an exponent), hexadecimal or binary. ClickHouse
// also reads a word that starts with digits (1file) as an identifier; such a
// token is refused rather than guessed at.
var numberRE = regexp.MustCompile(`^(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?|\.[0-9][0-9_]*(?:[eE][+-]?[0-9_]+)?)$`)

// lexSQL splits a ClickHouse statement into tokens, dropping whitespace and
// comments, the way ClickHouse's own lexer reads them: -- and "# " / "#!" line
// comments to the end of the line, nested /* */ comments, '…' strings and "…" /
// `…` identifiers with backslash escapes and doubled quotes. What the check could
// read differently from the engine is refused instead of guessed at: $ (heredoc
// strings and $ in names), a backslash escape inside a quoted identifier (the
// engine decodes `\x66ile` to file), characters outside printable ASCII outside
// strings and comments (Unicode spaces), a word that starts with a digit.
func lexSQL(sql string) ([]token, error) {
	var toks []token
	i, n := 0, len(sql)
	for i < n {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < n && sql[i+1] == '-':
			i = lineEnd(sql, i)
		case c == '#':
			if i+1 < n && (sql[i+1] == ' ' || sql[i+1] == '!') {
				i = lineEnd(sql, i)
				continue
			}
			return nil, lexError(sql, i, "a # that does not start a comment")
		case c == '/' && i+1 < n && sql[i+1] == '*':
			end, ok := commentEnd(sql, i)
			if !ok {
				return nil, lexError(sql, i, "a /* comment that is never closed")
			}
			i = end
		case c == '\'':
			end, _, ok := quotedEnd(sql, i)
			if !ok {
				return nil, lexError(sql, i, "a string that is never closed")
			}
			toks = append(toks, token{kind: tokString, pos: i})
			i = end
		case c == '"' || c == '`':
			end, escaped, ok := quotedEnd(sql, i)
			if !ok {
				return nil, lexError(sql, i, "a quoted name that is never closed")
			}
			if escaped {
				return nil, lexError(sql, i, "a backslash escape in a quoted name (the engine decodes it; write the name plainly)")
			}
			q := string(c)
			toks = append(toks, token{kind: tokQuoted, text: strings.ReplaceAll(sql[i+1:end-1], q+q, q), pos: i})
			i = end
		case c == '$':
			return nil, lexError(sql, i, "$ (heredoc strings and $ in names are not read here; use '…' strings and plain or quoted names)")
		case isWordStart(c):
			j := i + 1
			for j < n && isWordChar(sql[j]) {
				j++
			}
			if j < n && sql[j] == '$' {
				return nil, lexError(sql, j, "$ in a name")
			}
			toks = append(toks, token{kind: tokWord, text: sql[i:j], pos: i})
			i = j
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(sql[i+1]) && !afterName(toks)):
			j := i + 1
			for j < n && (isWordChar(sql[j]) || sql[j] == '.' || ((sql[j] == '+' || sql[j] == '-') && (sql[j-1] == 'e' || sql[j-1] == 'E') && !isHexPrefixed(sql[i:j]))) {
				j++
			}
			if !numberRE.MatchString(sql[i:j]) {
				return nil, lexError(sql, i, fmt.Sprintf("%q, which is neither a number nor a name (a name may not start with a digit here; quote it)", sql[i:j]))
			}
			toks = append(toks, token{kind: tokNumber, text: sql[i:j], pos: i})
			i = j
		case c > ' ' && c < 0x7f:
			toks = append(toks, token{kind: tokPunct, text: punct(sql, i), pos: i})
			i += len(toks[len(toks)-1].text)
		default:
			return nil, lexError(sql, i, fmt.Sprintf("the character %q outside a string or a quoted name", rune(c)))
		}
	}
	return toks, nil
}

// lexError names where the statement could not be read and why.
func lexError(sql string, pos int, what string) error {
	return &RefusedError{What: fmt.Sprintf("the statement at byte %d", pos), Why: "it holds " + what + near(sql, pos)}
}

// near quotes a few characters of sql from pos, for an error message.
func near(sql string, pos int) string {
	end := min(pos+20, len(sql))
	return fmt.Sprintf(", near %q", sql[pos:end])
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isWordChar(c byte) bool  { return isWordStart(c) || isDigit(c) }

// isHexPrefixed: in 0x1e+2 the e is a hex digit, not an exponent.
func isHexPrefixed(s string) bool { return len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') }

// afterName: ".5" after a name or a closing bracket is tuple access (t.1), not a number.
func afterName(toks []token) bool {
	if len(toks) == 0 {
		return false
	}
	t := toks[len(toks)-1]
	return t.isName() || t.kind == tokNumber || t.isPunct(")") || t.isPunct("]")
}

// lineEnd is the index after a line comment starting at i: the engine ends it at
// the next newline only.
func lineEnd(sql string, i int) int {
	if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(sql)
}

// commentEnd is the index after the /* comment starting at i, nested comments
// counted as the engine counts them.
func commentEnd(sql string, i int) (int, bool) {
	depth := 0
	for i+1 < len(sql) {
		switch {
		case sql[i] == '/' && sql[i+1] == '*':
			depth++
			i += 2
		case sql[i] == '*' && sql[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i, true
			}
		default:
			i++
		}
	}
	return 0, false
}

// quotedEnd is the index after the quoted text starting at i (its quote sql[i]):
// a backslash escapes the next byte and a doubled quote is a quote. escaped
// reports a backslash inside.
func quotedEnd(sql string, i int) (end int, escaped, ok bool) {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			escaped = true
			j++
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1, escaped, true
		}
	}
	return 0, escaped, false
}

// punct is the operator at i: the two-character ones whole, else one character.
func punct(sql string, i int) string {
	if i+1 < len(sql) {
		switch sql[i : i+2] {
		case "::", "->", "<=", ">=", "!=", "<>", "==", "||":
			return sql[i : i+2]
		}
	}
	return sql[i : i+1]
}
