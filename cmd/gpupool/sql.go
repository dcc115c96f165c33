package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
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
	if s.Write && !c.SQL.AllowWrite {
		return errors.New("sql: --write needs sql.allow_write: true in the configuration file (an administrator's decision); queries are read-only otherwise")
	}
	st, err := backend.OpenExisting(ctx, c.Store, newLogger("error"), !s.Write)
	if err != nil {
		return err
	}
	defer st.Close()
	var res *store.Result
	if s.Write {
		res, err = st.Query(ctx, s.Query, nil)
	} else {
		// readonly=1 alone lets file(), INTO OUTFILE and KILL through: the
		// statement checks refuse them (docs/store-security.md).
		res, err = store.QueryReadOnly(ctx, st, s.Query)
	}
	if err != nil {
		return err
	}
	out := stdout(s.out)
	if s.Output != "" {
		f, err := os.Create(s.Output)
		if err != nil {
			return fmt.Errorf("sql: %w", err)
		}
		defer f.Close()
		out = f
	} else if s.Format == reports.FormatParquet && s.out == nil && term.IsTerminal(int(os.Stdout.Fd())) {
		return errors.New("sql: Parquet is binary: write it to a file with -o FILE or redirect standard output")
	}
	return reports.Write(out, res, s.Format)
}
