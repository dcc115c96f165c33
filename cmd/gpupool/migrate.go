package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store/backend"
)

// MigrateCmd applies the schema migrations (or prints them).
type MigrateCmd struct {
	Print bool `help:"Print the DDL that would run, rendered for the configured database and cluster, and exit."`
}

// Run applies or prints the migrations.
func (m *MigrateCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(nil)
	if err != nil {
		return err
	}
	if m.Print {
		ms, err := schemas.Migrations(c.Store.MigrationParams())
		if err != nil {
			return err
		}
		for _, mg := range ms {
			fmt.Fprintf(os.Stdout, "-- migration %04d_%s (checksum %s)\n", mg.Version, mg.Name, mg.Checksum)
			for _, q := range mg.Statements {
				fmt.Fprintf(os.Stdout, "%s;\n\n", q)
			}
		}
		return nil
	}
	s, err := backend.OpenMigrated(ctx, c.Store, log)
	if err != nil {
		return err
	}
	return s.Close()
}
