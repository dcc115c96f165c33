package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store/backend"
)

// PricebookCmd maintains the price book finance sets per card type.
type PricebookCmd struct {
	Load  PricebookLoadCmd  `cmd:"" help:"Load prices from a CSV file (card,effective_from,effective_to,price_per_gpu_hour,currency,note); loading a file again changes nothing."`
	Check PricebookCheckCmd `cmd:"" help:"List what is wrong with the price book for the cards used in a period (gaps, overlaps, mixed currencies, …); exits non-zero when something is."`
}

// PricebookLoadCmd loads a price book CSV into the store.
type PricebookLoadCmd struct {
	File string `arg:"" type:"existingfile" help:"Price book CSV, e.g. deploy/price_book.example.csv."`

	out io.Writer // stdout unless a test sets it
}

// Run validates the whole file, then writes the rows that are new or changed.
func (p *PricebookLoadCmd) Run(g *Globals, ctx context.Context) error {
	rows, err := pricebook.Read(p.File)
	if err != nil {
		return err
	}
	c, log, err := g.setup(nil)
	if err != nil {
		return err
	}
	st, err := backend.OpenMigrated(ctx, c.Store, log)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := pricebook.Load(ctx, st, rows)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout(p.out), "price book: %d row(s) from %s: %d written, %d already current\n", len(rows), p.File, res.Inserted, res.Unchanged)
	return nil
}

// PricebookCheckCmd checks the price book against the cards in use.
type PricebookCheckCmd struct {
	From string `help:"Start of the period (RFC 3339 or YYYY-MM-DD, UTC; default: 30 days before --to)."`
	To   string `help:"End of the period, exclusive (default: now)."`

	out io.Writer // stdout unless a test sets it
}

// Run prints every problem with its card and dates, and fails when there is one.
func (p *PricebookCheckCmd) Run(g *Globals, ctx context.Context) error {
	from, to, err := reports.ParseRange(p.From, p.To, time.Now(), 30*24*time.Hour)
	if err != nil {
		return fmt.Errorf("pricebook check: %w", err)
	}
	c, _, err := g.setup(nil)
	if err != nil {
		return err
	}
	st, err := backend.OpenExisting(ctx, c.Store, newLogger("error"), true)
	if err != nil {
		return err
	}
	defer st.Close()
	problems, err := pricebook.Check(ctx, st, from, to)
	if err != nil {
		return err
	}
	return pricebook.WriteProblems(stdout(p.out), problems, from, to)
}
