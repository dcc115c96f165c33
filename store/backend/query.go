package backend

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gpupool/gpupool/store"
)

// Query runs one statement against the existing store (OpenExisting): with
// writes only when write is asked and allowWrite (sql.allow_write, an
// administrator's decision) permits it, else read-only (store.QueryAs).
func Query(ctx context.Context, c Config, log *slog.Logger, sql string, write, allowWrite bool) (*store.Result, error) {
	if write && !allowWrite {
		return nil, errors.New("sql: --write needs sql.allow_write: true in the configuration file (an administrator's decision); queries are read-only otherwise")
	}
	st, err := OpenExisting(ctx, c, log, !write)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return store.QueryAs(ctx, st, sql, write)
}
