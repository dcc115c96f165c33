package main

import (
	"context"
	"io"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store/backend"
)

// SQLCmd runs one query against the store: read-only unless the configuration
// allows writes (sql.allow_write, set by an administrator) and --write is given.
// Read-only, it runs one read statement that touches no file, network or process
// (store.QueryReadOnly) on a connection with readonly=1.
type SQLCmd struct {
	Query  string `arg:"" help:"SQL to run, e.g. \"SELECT team, count() FROM jobs GROUP BY team\"."`
	Format string `short:"f" help:"Output format: table, csv, json or parquet." enum:"table,csv,json,parquet" default:"table"`
	Output string `short:"o" help:"Write the result to this file instead of standard output."`
	Write  bool   `help:"Allow statements that change data (needs sql.allow_write: true in the configuration)."`

	out io.Writer // stdout unless a test sets it
}

// Run executes the query and prints the result.
func (s *SQLCmd) Run(g *Globals, ctx context.Context) error {
	c, _, err := g.setup(nil)
	if err != nil {
		return err
	}
	res, err := backend.Query(ctx, c.Store, newLogger("error"), s.Query, s.Write, c.SQL.AllowWrite)
	if err != nil {
		return err
	}
	out, closeOut, err := reports.OpenOutput("sql", s.Output, s.Format, s.out)
	if err != nil {
		return err
	}
	defer closeOut()
	return reports.Write(out, res, s.Format)
}
