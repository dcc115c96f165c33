package grants

import (
	"fmt"
	"io"

	"github.com/gpupool/gpupool/schemas"
)

// Print writes the DDL of the roles for the database and cluster of mp, with a
// reader role per team, to w.
func Print(w io.Writer, mp schemas.MigrationParams, teams []string) error {
	pl, err := Build(Params{DB: mp.DB, Cluster: mp.Cluster, Teams: teams})
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(w, pl.DDL())
	return err
}
