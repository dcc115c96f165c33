package main

import (
	"context"
	"io"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store/backend"
	"github.com/gpupool/gpupool/store/grants"
)

// MigrateCmd applies the schema migrations (or prints them, or the roles' grants).
type MigrateCmd struct {
	Print       bool     `help:"Print the DDL that would run, rendered for the configured database and cluster, and exit."`
	PrintGrants bool     `help:"Print the DDL creating a least-privilege ClickHouse role per component (and per --team), rendered for the configured database and cluster, and exit (docs/store-security.md)."`
	Team        []string `help:"With --print-grants: a team to make a reader role for, seeing only its team's rows (repeat, or comma-separate)."`
	Cluster     string   `help:"ClickHouse cluster to run (or print) the DDL on: ReplicatedMergeTree and Distributed tables, ON CLUSTER (overrides store.clickhouse.cluster; implies the clickhouse backend)."`

	out io.Writer // stdout unless a test sets it
}

// Run applies or prints the migrations.
func (m *MigrateCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(func(c *config.Config) {
		if m.Cluster != "" {
			c.Store.Backend, c.Store.ClickHouse.Cluster = backend.ClickHouse, m.Cluster
		}
	})
	if err != nil {
		return err
	}
	if m.PrintGrants {
		return grants.Print(stdout(m.out), c.Store.MigrationParams(), m.Team)
	}
	if m.Print {
		return schemas.PrintMigrations(stdout(m.out), c.Store.MigrationParams())
	}
	s, err := backend.OpenMigrated(ctx, c.Store, log)
	if err != nil {
		return err
	}
	return s.Close()
}
