package chdb

import "context"

// QueryOutput is a query's raw output in format, for the package's external
// tests.
func QueryOutput(s *Store, sql, format string) ([]byte, error) {
	return s.queryData(context.Background(), sql, format, nil)
}
