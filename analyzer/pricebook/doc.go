// Package pricebook is the price book finance sets per card type: reading and
// checking its CSV, loading it into the store, looking prices up and reporting
// what is wrong with it for the cards in use.
//
// In: a price book CSV (Columns; deploy/price_book.example.csv is the built-in
// example) or a store holding the price_book table and its views
// (price_book_current, price_timeline; migration 0003, docs/finance.md).
//
// Out:
//   - Read, Parse: the CSV's rows, validated; every bad line is a *LineError
//     naming its line and column, joined under ErrBad and the file's name.
//   - Load: the rows written into price_book, idempotently; Empty: whether the
//     price book has no current row.
//   - Book.PricePerGPUHour: the price of a card at an instant, as the chargeback
//     applies it (the price_timeline row in effect at the start of that hour);
//     SliceWeight: the share of a whole GPU a MIG unit pays.
//   - Check: what is wrong with the price book for the cards used in a period
//     (gaps, overlaps, mixed currencies, …), with the card and dates;
//     WriteProblems prints them.
//
// Units: prices are per whole GPU per hour in the row's currency (an ISO 4217
// code); times are UTC and prices apply per whole hour.
package pricebook
