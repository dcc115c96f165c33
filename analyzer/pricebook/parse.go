package pricebook

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/gpupool/gpupool/deploy"
)

// Columns are the columns of a price book CSV, in order. A header line naming
// them is optional; lines starting with # are comments.
var Columns = []string{"card", "effective_from", "effective_to", "price_per_gpu_hour", "currency", "note"}

// Row is one row of the price book (the price_book table, migration 0003).
type Row struct {
	// Line is the row's line in the CSV it was read from (0: not from a file).
	Line int
	Card string
	// From and To bound the price, UTC; a zero To is open-ended.
	From, To time.Time
	// Price is the price of one whole GPU for one hour, as written (a decimal of up
	// to 6 places, stored exactly).
	Price    string
	Currency string
	Note     string
}

// LineError is what is wrong with one line of a price book CSV. Its text is
// "line N: " and Err's, which starts with the column's name where one is at
// fault.
type LineError struct {
	// Line is the line of the CSV, from 1.
	Line int
	// Column is the column at fault (one of Columns), or "" for the whole line
	// (field count, header, a duplicate row, a CSV syntax error).
	Column string
	Err    error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

var (
	priceRe    = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,6})?$`)
	currencyRe = regexp.MustCompile(`^[A-Z]{3}$`)
)

// maxErrors bounds how many bad lines one error lists.
const maxErrors = 20

// ExampleName is how errors name the built-in example price book.
const ExampleName = "deploy/price_book.example.csv (built in)"

// Read reads and validates a price book CSV file; "" is the built-in example
// (deploy/price_book.example.csv). Errors name the file.
func Read(path string) ([]Row, error) {
	data, name := deploy.PriceBookExample, ExampleName
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("price book: %w", err)
		}
		name = path
	}
	rows, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("price book %s: %w", name, err)
	}
	return rows, nil
}

// parser collects the rows of one CSV and what is wrong with its lines.
type parser struct {
	rows []Row
	errs []error
	// seen is the line of each card and effective_from already read.
	seen map[string]int
}

func (p *parser) bad(line int, column, format string, args ...any) {
	if len(p.errs) < maxErrors {
		p.errs = append(p.errs, &LineError{Line: line, Column: column, Err: fmt.Errorf(format, args...)})
	}
}

// Parse reads a price book CSV (Columns). Every bad line is reported as a
// *LineError with its number and what is wrong; nothing is returned unless every
// line is good.
func Parse(r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	p := &parser{seen: map[string]int{}}
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A syntax error (a stray quote) ends reading: what follows cannot be
			// split into fields reliably.
			if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
				p.bad(pe.Line, "", "%v", pe.Err)
			} else {
				p.errs = append(p.errs, err)
			}
			break
		}
		line, _ := cr.FieldPos(0)
		if first && strings.EqualFold(strings.TrimSpace(rec[0]), Columns[0]) {
			p.header(line, rec)
			continue
		}
		p.record(line, rec)
	}
	if len(p.errs) > 0 {
		return nil, fmt.Errorf("%w:\n%w", ErrBad, errors.Join(p.errs...))
	}
	return p.rows, nil
}

func (p *parser) header(line int, rec []string) {
	if strings.Join(trimAll(rec), ",") != strings.Join(Columns, ",") {
		p.bad(line, "", "header %q is not %q", strings.Join(rec, ","), strings.Join(Columns, ","))
	}
}

// record checks one data line and keeps it when it is good.
func (p *parser) record(line int, rec []string) {
	if len(rec) != len(Columns) {
		p.bad(line, "", "%d fields, want %d (%s)", len(rec), len(Columns), strings.Join(Columns, ","))
		return
	}
	rec = trimAll(rec)
	row, ok := p.check(line, rec)
	if !ok {
		return
	}
	key := row.Card + "\x00" + row.From.String()
	if prev, dup := p.seen[key]; dup {
		p.bad(line, "", "%s from %s is already priced on line %d", row.Card, rec[1], prev)
		return
	}
	p.seen[key] = line
	p.rows = append(p.rows, row)
}

// check validates each field of a trimmed line of len(Columns) fields.
func (p *parser) check(line int, rec []string) (Row, bool) {
	r := Row{Line: line, Card: rec[0], Price: rec[3], Currency: rec[4], Note: rec[5]}
	ok := true
	fail := func(column, format string, args ...any) { p.bad(line, column, format, args...); ok = false }
	if r.Card == "" {
		fail("card", "card: empty")
	}
	var err error
	if r.From, err = parseTime(rec[1]); err != nil || rec[1] == "" {
		fail("effective_from", "effective_from: %q is not a time (RFC 3339, YYYY-MM-DD or YYYY-MM-DD HH:MM:SS, UTC, 1970..2105)", rec[1])
	}
	if rec[2] != "" {
		if r.To, err = parseTime(rec[2]); err != nil {
			fail("effective_to", "effective_to: %q is not a time (RFC 3339, YYYY-MM-DD or YYYY-MM-DD HH:MM:SS, UTC, 1970..2105; empty: open-ended)", rec[2])
		} else if ok && !r.To.After(r.From) {
			fail("effective_to", "effective_to %s is not after effective_from %s", rec[2], rec[1])
		}
	}
	if !priceRe.MatchString(r.Price) {
		fail("price_per_gpu_hour", "price_per_gpu_hour: %q is not a non-negative decimal with at most 6 places", r.Price)
	}
	if !currencyRe.MatchString(r.Currency) {
		fail("currency", "currency: %q is not an ISO 4217 code such as USD", r.Currency)
	}
	return r, ok
}

func trimAll(rec []string) []string {
	out := make([]string, len(rec))
	for i, f := range rec {
		out[i] = strings.TrimSpace(f)
	}
	return out
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, time.DateTime, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Truncate(time.Second) != t {
				return time.Time{}, errors.New("sub-second time")
			}
			// The table's DateTime holds 1970 to 2106.
			if t.Year() < 1970 || t.Year() > 2105 {
				return time.Time{}, errors.New("outside 1970..2105")
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("not a time")
}
