package chdb

import "context"

// InsertRaw streams already-encoded Native bytes (probe helper).
func InsertRaw(s *Store, ctx context.Context, table string, data []byte) error {
	c, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer s.release(c)
	_, err = c.insert("INSERT INTO "+table, "Native", data)
	return err
}
