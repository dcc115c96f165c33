package schemas

import (
	"fmt"
	"io"
)

// PrintMigrations writes the DDL of every migration, rendered with p, to w: a
// comment naming each migration and its checksum, then its statements.
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
	return nil
}
