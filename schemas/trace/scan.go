package trace

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit, so that the scanner accepts exactly
// the lines json.Valid accepts.
const maxDepth = 10000

// syntaxError is JSON that does not parse; off is a byte offset in the line.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return "invalid JSON: " + e.msg + " at column " + strconv.Itoa(e.off+1)
}

// plain marks the bytes a string can hold as they are: not '"', '\\', a control
// character or the start of a multi-byte UTF-8 sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanner reads one JSON text from b. It validates as it goes and allocates only
// when a string holds escapes or invalid UTF-8 (into buf, reused).
type scanner struct {
	b   []byte
	i   int
	buf []byte
}

func (s *scanner) reset(b []byte) { s.b, s.i = b, 0 }

func (s *scanner) fail(msg string) error { return &syntaxError{off: s.i, msg: msg} }

func (s *scanner) unexpected(what string) error {
	if s.i >= len(s.b) {
		return s.fail("unexpected end of line " + what)
	}
	return s.fail("unexpected " + quoteByte(s.b[s.i]) + " " + what)
}

func quoteByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return "byte 0x" + strconv.FormatUint(uint64(c), 16)
	}
	return strconv.QuoteRune(rune(c))
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object reads an object, calling field with each key (unescaped; valid only during
// the call) and the span of its value.
func (s *scanner) object(field func(key []byte, start, end int)) error {
	if s.peek() != '{' {
		return s.unexpected("where an object should start")
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.unexpected("where a key should start")
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		// A key with escapes lives in s.buf, which skip leaves alone.
		if s.peek() != ':' {
			return s.unexpected("after a key (want ':')")
		}
		s.i++
		s.ws()
		start := s.i
		if err := s.skip(1); err != nil {
			return err
		}
		field(key, start, s.i)
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.unexpected("after a value (want ',' or '}')")
		}
	}
}

// end checks that only white space follows.
func (s *scanner) end() error {
	if s.peek() != 0 || s.i < len(s.b) {
		return s.unexpected("after the object")
	}
	return nil
}

// skip reads any value; depth counts the enclosing objects and arrays.
func (s *scanner) skip(depth int) error {
	switch c := s.peek(); {
	case c == '"':
		return s.skipStr()
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.num()
		return err
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '[':
		if depth+1 > maxDepth {
			return s.fail("nesting too deep")
		}
		s.i++
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return s.unexpected("in an array (want ',' or ']')")
			}
		}
	case c == '{':
		if depth+1 > maxDepth {
			return s.fail("nesting too deep")
		}
		s.i++
		if s.peek() == '}' {
			s.i++
			return nil
		}
		for {
			if s.peek() != '"' {
				return s.unexpected("where a key should start")
			}
			if err := s.skipStr(); err != nil {
				return err
			}
			if s.peek() != ':' {
				return s.unexpected("after a key (want ':')")
			}
			s.i++
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return nil
			default:
				return s.unexpected("in an object (want ',' or '}')")
			}
		}
	default:
		return s.unexpected("where a value should start")
	}
}

func (s *scanner) lit(want string) error {
	if len(s.b)-s.i < len(want) || string(s.b[s.i:s.i+len(want)]) != want {
		return s.fail("invalid literal (want " + want + ")")
	}
	s.i += len(want)
	return nil
}

// num reads a number and returns its text, checked against JSON's grammar.
func (s *scanner) num() ([]byte, error) {
	b, start := s.b, s.i
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		s.i = i
		return nil, s.unexpected("in a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.i = i
			return nil, s.unexpected("after a decimal point")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.i = i
			return nil, s.unexpected("in an exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	return b[start:i], nil
}

// skipStr reads a string without unescaping it.
func (s *scanner) skipStr() error {
	b := s.b
	i := s.i + 1
	for i < len(b) {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return nil
		case c == '\\':
			if i+1 >= len(b) {
				s.i = i + 1
				return s.unexpected("in a string escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if !isHex4(b[i+2:]) {
					s.i = i
					return s.fail(`invalid \u escape`)
				}
				i += 6
			default:
				s.i = i + 1
				return s.unexpected("in a string escape")
			}
		case c < 0x20:
			s.i = i
			return s.unexpected("in a string")
		default:
			i++
		}
	}
	s.i = i
	return s.unexpected("in a string")
}

func isHex4(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// str reads a string and returns its value: a slice of the line when it holds no
// escapes and is valid UTF-8, else s.buf. Like encoding/json, it replaces invalid
// UTF-8 and unpaired surrogates with U+FFFD.
func (s *scanner) str() ([]byte, error) {
	b := s.b
	start := s.i + 1
	i := start
	for i < len(b) {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		if c == '"' {
			s.i = i + 1
			return b[start:i], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	// Slow path: escapes, control characters or invalid UTF-8.
	out := append(s.buf[:0], b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			s.buf = out
			return out, nil
		case c < 0x20:
			s.i = i
			return nil, s.unexpected("in a string")
		case c == '\\':
			if i+1 >= len(b) {
				s.i = i + 1
				return nil, s.unexpected("in a string escape")
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				i += 2
			case 'b':
				out, i = append(out, '\b'), i+2
			case 'f':
				out, i = append(out, '\f'), i+2
			case 'n':
				out, i = append(out, '\n'), i+2
			case 'r':
				out, i = append(out, '\r'), i+2
			case 't':
				out, i = append(out, '\t'), i+2
			case 'u':
				if !isHex4(b[i+2:]) {
					s.i = i
					return nil, s.fail(`invalid \u escape`)
				}
				r := hex4(b[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' && isHex4(b[i+2:]) {
						r2 = hex4(b[i+2:])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				s.i = i + 1
				return nil, s.unexpected("in a string escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	s.i = i
	s.buf = out
	return nil, s.unexpected("in a string")
}
