package store

import "context"

// QueryAs runs one statement: as given when write is set, else as a read that
// touches no file, network or process (QueryReadOnly), since readonly=1 alone
// lets file(), INTO OUTFILE and KILL through (docs/store-security.md).
func QueryAs(ctx context.Context, st Store, sql string, write bool) (*Result, error) {
	if write {
		return st.Query(ctx, sql, nil)
	}
	return QueryReadOnly(ctx, st, sql)
}
