package schemas

import (
	"fmt"
	"io"
)

// PrintMigrations writes the DDL of every migration, rendered with p, to w: a
// comment naming each migration and its checksum, then its statements; then every
// view, in the order store.Migrate applies them, under one comment.
func PrintMigrations(w io.Writer, p MigrationParams) error {
	ms, err := Migrations(p)
	if err != nil {
		return err
	}
	for _, mg := range ms {
		fmt.Fprintf(w, "-- migration %04d_%s (checksum %s)\n", mg.Version, mg.Name, mg.Checksum)
		for _, q := range mg.Statements {
			fmt.Fprintf(w, "%s;\n\n", q)
		}
	}
	vs, err := Views(p)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "-- migration views (repeatable: schemas/views/*.sql, re-applied when checksum %s changes)\n", ViewsChecksum(vs))
	for _, v := range vs {
		fmt.Fprintf(w, "%s;\n\n", v.Statement)
	}
	return nil
}
