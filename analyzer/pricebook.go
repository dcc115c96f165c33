package analyzer

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/deploy"
	"github.com/gpupool/gpupool/store"
)

// PriceBookColumns are the columns of a price book CSV, in order. A header line
// naming them is optional; lines starting with # are comments.
var PriceBookColumns = []string{"card", "effective_from", "effective_to", "price_per_gpu_hour", "currency", "note"}

// PriceRow is one row of the price book (the price_book table, migration 0003).
type PriceRow struct {
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

// ErrBadPriceBook means a price book file has rows that cannot be loaded; the
// error lists each with its line number.
var ErrBadPriceBook = errors.New("bad price book")

var (
	priceRe    = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,6})?$`)
	currencyRe = regexp.MustCompile(`^[A-Z]{3}$`)
)

// maxPriceErrors bounds how many bad lines one error lists.
const maxPriceErrors = 20

// ReadPriceBook reads and validates a price book CSV file; "" is the built-in
// example (deploy/price_book.example.csv). Errors name the file.
func ReadPriceBook(path string) ([]PriceRow, error) {
	data := deploy.PriceBookExample
	name := "deploy/price_book.example.csv (built in)"
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("price book: %w", err)
		}
		name = path
	}
	rows, err := ParsePriceBook(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("price book %s: %w", name, err)
	}
	return rows, nil
}

// ParsePriceBook reads a price book CSV (PriceBookColumns). Every bad line is
// reported with its number and what is wrong; nothing is returned unless every
// line is good.
func ParsePriceBook(r io.Reader) ([]PriceRow, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var rows []PriceRow
	var errs []error
	bad := func(line int, format string, args ...any) {
		if len(errs) < maxPriceErrors {
			errs = append(errs, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...)))
		}
	}
	seen := map[string]int{}
	first := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A syntax error (a stray quote) ends reading: what follows cannot be
			// split into fields reliably.
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				bad(pe.Line, "%v", pe.Err)
			} else {
				errs = append(errs, err)
			}
			break
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if strings.EqualFold(strings.TrimSpace(rec[0]), PriceBookColumns[0]) {
				if strings.Join(trimAll(rec), ",") != strings.Join(PriceBookColumns, ",") {
					bad(line, "header %q is not %q", strings.Join(rec, ","), strings.Join(PriceBookColumns, ","))
				}
				continue
			}
		}
		if len(rec) != len(PriceBookColumns) {
			bad(line, "%d fields, want %d (%s)", len(rec), len(PriceBookColumns), strings.Join(PriceBookColumns, ","))
			continue
		}
		rec = trimAll(rec)
		p := PriceRow{Line: line, Card: rec[0], Price: rec[3], Currency: rec[4], Note: rec[5]}
		ok := true
		fail := func(format string, args ...any) { bad(line, format, args...); ok = false }
		if p.Card == "" {
			fail("card: empty")
		}
		if p.From, err = parsePriceTime(rec[1]); err != nil || rec[1] == "" {
			fail("effective_from: %q is not a time (RFC 3339, YYYY-MM-DD or YYYY-MM-DD HH:MM:SS, UTC, 1970..2105)", rec[1])
		}
		if rec[2] != "" {
			if p.To, err = parsePriceTime(rec[2]); err != nil {
				fail("effective_to: %q is not a time (RFC 3339, YYYY-MM-DD or YYYY-MM-DD HH:MM:SS, UTC, 1970..2105; empty: open-ended)", rec[2])
			} else if ok && !p.To.After(p.From) {
				fail("effective_to %s is not after effective_from %s", rec[2], rec[1])
			}
		}
		if !priceRe.MatchString(p.Price) {
			fail("price_per_gpu_hour: %q is not a non-negative decimal with at most 6 places", p.Price)
		}
		if !currencyRe.MatchString(p.Currency) {
			fail("currency: %q is not an ISO 4217 code such as USD", p.Currency)
		}
		if !ok {
			continue
		}
		key := p.Card + "\x00" + p.From.String()
		if prev, dup := seen[key]; dup {
			bad(line, "%s from %s is already priced on line %d", p.Card, rec[1], prev)
			continue
		}
		seen[key] = line
		rows = append(rows, p)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n%w", ErrBadPriceBook, errors.Join(errs...))
	}
	return rows, nil
}

func trimAll(rec []string) []string {
	out := make([]string, len(rec))
	for i, f := range rec {
		out[i] = strings.TrimSpace(f)
	}
	return out
}

func parsePriceTime(s string) (time.Time, error) {
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

// LoadResult says what LoadPriceBook did.
type LoadResult struct {
	// Inserted rows were new or changed (a correction of an existing card and
	// effective_from); Unchanged rows were already in the price book as given.
	Inserted, Unchanged int
}

// LoadPriceBook writes rows into price_book. It is idempotent: a row already
// current in the price book with the same figures is not written again, and a
// changed one is written as a new version (the newer version wins; see
// docs/finance.md). Rows of the table that the file does not mention are left as
// they are.
func LoadPriceBook(ctx context.Context, st Store, rows []PriceRow) (LoadResult, error) {
	var res LoadResult
	cur, err := st.Query(ctx, `SELECT toString(card) AS card, effective_from,
       ifNull(toString(effective_to), '') AS effective_to, toString(price_per_gpu_hour) AS price,
       toString(currency) AS currency, note
FROM price_book_current`, nil)
	if err != nil {
		return res, fmt.Errorf("price book: read price_book_current: %w", err)
	}
	current := map[string]bool{}
	have := store.Read(cur, "price_book_current")
	for have.Next() {
		key := priceKey(have.Str("card"), have.Time("effective_from"), have.Str("effective_to"), have.Str("price"), have.Str("currency"), have.Str("note"))
		current[key] = true
	}
	if err := have.Err(); err != nil {
		return res, fmt.Errorf("price book: read price_book_current: %w", err)
	}
	var tuples []string
	for _, r := range rows {
		to := ""
		if !r.To.IsZero() {
			to = r.To.Format(time.DateTime)
		}
		if current[priceKey(r.Card, r.From, to, r.Price, r.Currency, r.Note)] {
			res.Unchanged++
			continue
		}
		toLit := "NULL"
		if to != "" {
			toLit = quoteParam(to)
		}
		tuples = append(tuples, fmt.Sprintf("(%s,%s,%s,%s,%s,%s)", quoteParam(r.Card), quoteParam(r.From.Format(time.DateTime)),
			toLit, r.Price, quoteParam(r.Currency), quoteParam(r.Note)))
	}
	if len(tuples) == 0 {
		return res, nil
	}
	err = st.Exec(ctx, `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note)
SELECT r.1, r.2, r.3, r.4, r.5, r.6
FROM (SELECT arrayJoin({rows:Array(Tuple(String, DateTime('UTC'), Nullable(DateTime('UTC')), Decimal(18, 6), String, String))}) AS r)`,
		store.Params{"rows": "[" + strings.Join(tuples, ",") + "]"})
	if err != nil {
		return res, fmt.Errorf("price book: insert %d rows: %w", len(tuples), err)
	}
	res.Inserted = len(tuples)
	return res, nil
}

// priceKey identifies a price book row with its figures; the price is compared
// as a number (the table prints 3.2 for 3.20).
func priceKey(card string, from time.Time, to, price, currency, note string) string {
	if f, err := strconv.ParseFloat(price, 64); err == nil {
		price = strconv.FormatFloat(f, 'f', 6, 64)
	}
	return strings.Join([]string{card, from.UTC().Format(time.DateTime), to, price, currency, note}, "\x00")
}

// quoteParam quotes s as a string literal inside a query parameter's value
// (ClickHouse's escaped text format).
func quoteParam(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\t", `\t`).Replace(s) + "'"
}

// PriceBookEmpty reports whether the price book has no current row.
func PriceBookEmpty(ctx context.Context, q store.Querier) (bool, error) {
	res, err := q.Query(ctx, "SELECT count() AS n FROM price_book_current", nil)
	if err != nil {
		return false, fmt.Errorf("price book: %w", err)
	}
	rows := store.Read(res, "price_book_current count").At(0)
	n := rows.Int("n")
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("price book: %w", err)
	}
	return n == 0, nil
}
