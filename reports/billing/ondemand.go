package billing

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gpupool/gpupool/reports"
)

// GenerateTo is gpupool report run: it writes the report of period p in formats,
// cut to teams (none: the whole fleet), and prints each file's path, then the
// report's summary, on out.
func (r *Runner) GenerateTo(ctx context.Context, out io.Writer, name string, p reports.Period, formats, teams []string) error {
	scope := FleetScope()
	if len(teams) > 0 {
		scope = TeamScope(teams...)
	}
	rep, paths, err := r.GenerateFor(ctx, name, p, formats, scope)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return errors.New("no report written")
	}
	for _, path := range paths {
		fmt.Fprintln(out, path)
	}
	fmt.Fprintln(out, Summary(rep))
	return nil
}
