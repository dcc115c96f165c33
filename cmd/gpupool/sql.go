package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/gpupool/gpupool/reports"
)

// SQLCmd runs one query against the store, read-only.
type SQLCmd struct {
	Query  string `arg:"" help:"SQL to run, e.g. \"SELECT team, count() FROM jobs GROUP BY team\"."`
	Format string `short:"f" help:"Output format: table, csv or json." enum:"table,csv,json" default:"table"`

	out io.Writer // stdout unless a test sets it
}

// Run executes the query and prints the result.
func (s *SQLCmd) Run(g *Globals, ctx context.Context) error {
	c, err := g.loadConfig()
	if err != nil {
		return err
	}
	if err := g.finish(&c); err != nil {
		return err
	}
	log := newLogger("error")
	if c.Store.Backend == "chdb" {
		if _, err := os.Stat(c.Store.CHDB.Path); err != nil {
			return fmt.Errorf("no embedded database at %s (run \"gpupool demo\" first, or pass --data-dir)", c.Store.CHDB.Path)
		}
	}
	st, err := openStore(ctx, c, log, true)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := st.Query(ctx, s.Query, nil)
	if err != nil {
		return err
	}
	var out io.Writer = os.Stdout
	if s.out != nil {
		out = s.out
	}
	return reports.Write(out, res, s.Format)
}
