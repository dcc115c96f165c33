package pricebook

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/store"
)

// Store is what Load needs of the store: read the current price book, insert
// rows.
type Store interface {
	store.Querier
	Exec(ctx context.Context, sql string, params store.Params) error
}

var _ Store = store.Store(nil)

// LoadResult says what Load did.
type LoadResult struct {
	// Inserted rows were new or changed (a correction of an existing card and
	// effective_from); Unchanged rows were already in the price book as given.
	Inserted, Unchanged int
}

// Load writes rows into price_book. It is idempotent: a row already current in
// the price book with the same figures is not written again, and a changed one is
// written as a new version (the newer version wins; see docs/finance.md). Rows of
// the table that the rows do not mention are left as they are.
func Load(ctx context.Context, st Store, rows []Row) (LoadResult, error) {
	var res LoadResult
	current, err := currentKeys(ctx, st)
	if err != nil {
		return res, err
	}
	var tuples []string
	for _, r := range rows {
		to := ""
		if !r.To.IsZero() {
			to = r.To.Format(time.DateTime)
		}
		if current[rowKey(r.Card, r.From, to, r.Price, r.Currency, r.Note)] {
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

// currentKeys are the rowKeys of price_book_current.
func currentKeys(ctx context.Context, q store.Querier) (map[string]bool, error) {
	cur, err := q.Query(ctx, `SELECT toString(card) AS card, effective_from,
       ifNull(toString(effective_to), '') AS effective_to, toString(price_per_gpu_hour) AS price,
       toString(currency) AS currency, note
FROM price_book_current`, nil)
	if err != nil {
		return nil, fmt.Errorf("price book: read price_book_current: %w", err)
	}
	current := map[string]bool{}
	have := store.Read(cur, "price_book_current")
	for have.Next() {
		key := rowKey(have.Str("card"), have.Time("effective_from"), have.Str("effective_to"), have.Str("price"), have.Str("currency"), have.Str("note"))
		current[key] = true
	}
	if err := have.Err(); err != nil {
		return nil, fmt.Errorf("price book: read price_book_current: %w", err)
	}
	return current, nil
}

// rowKey identifies a price book row with its figures; the price is compared as
// a number (the table prints 3.2 for 3.20).
func rowKey(card string, from time.Time, to, price, currency, note string) string {
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

// Empty reports whether the price book has no current row.
func Empty(ctx context.Context, q store.Querier) (bool, error) {
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
