package storetest

import (
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Backend is what a store backend gives the suite.
type Backend struct {
	// Open opens a store on a new, empty database of its own, isolated from every
	// other test's, and drops the database and closes the store when the test ends.
	Open func(t *testing.T) store.Store
	// Reopen opens another store on the database of s, which may be closed: a
	// read-only one when readOnly is set. It closes the store when the test ends.
	Reopen func(t *testing.T, s store.Store, readOnly bool) store.Store
	// Lacks names the shared behaviours (Run's subtests) the backend does not have
	// yet, each with why and where it is tracked. Their subtests skip, saying so;
	// a name Run has no subtest for fails the run.
	Lacks map[string]string
}

// Run runs the shared suite against b, one subtest a behaviour.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		test func(*testing.T, Backend)
	}{
		{"InsertAndQueryTypes", testInsertAndQueryTypes},
		{"InsertDeduplicationToken", testInsertDeduplicationToken},
		{"InsertSameMapTwice", testInsertSameMapTwice},
		{"InsertWidens", testInsertWidens},
		{"InsertRefusesNarrowing", testInsertRefusesNarrowing},
		{"LowCardinalityNative", testLowCardinalityNative},
		{"QueryParams", testQueryParams},
		{"ResultKinds", testResultKinds},
		{"MigrateIdempotent", testMigrateIdempotent},
		{"MigrateUpToDateOnlyReads", testMigrateUpToDateOnlyReads},
		{"MigrateAddsActor", testMigrateAddsActor},
		{"DataSurvivesReopen", testDataSurvivesReopen},
		{"ReadOnly", testReadOnly},
	}
	known := map[string]bool{}
	for _, tt := range tests {
		known[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			if why, ok := b.Lacks[tt.name]; ok {
				t.Skipf("the backend lacks this: %s", why)
			}
			tt.test(t, b)
		})
	}
	for name := range b.Lacks {
		if !known[name] {
			t.Errorf("Backend.Lacks names %q, which is no subtest of the suite", name)
		}
	}
}

// MigrationParams are the parameters the suite migrates s with: 30 days of raw
// samples, ON CLUSTER where s is a server store on a cluster (it has a Cluster
// method, as store/clickhouse's does).
func MigrationParams(s store.Store) schemas.MigrationParams {
	p := schemas.MigrationParams{DB: s.Database(), RawTTLDays: 30}
	if c, ok := s.(interface{ Cluster() string }); ok {
		p.Cluster = c.Cluster()
	}
	return p
}

// Count returns the number of rows in table, failing the test on an error.
func Count(t *testing.T, s store.Store, table string) int64 {
	t.Helper()
	return N(t, s, "SELECT count() AS n FROM "+schemas.QuoteIdent(table))
}

// N runs query and returns column n of its first row, failing the test on an
// error.
func N(t *testing.T, s store.Store, query string) int64 {
	t.Helper()
	res, err := s.Query(t.Context(), query, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := res.Int(0, "n")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// open opens a store on a fresh database and runs the statements in it.
func (b Backend) open(t *testing.T, statements ...string) store.Store {
	t.Helper()
	s := b.Open(t)
	exec(t, s, statements...)
	return s
}

// migrated opens a store on a fresh database and migrates it.
func (b Backend) migrated(t *testing.T) store.Store {
	t.Helper()
	s := b.Open(t)
	if _, err := store.Migrate(t.Context(), s, MigrationParams(s)); err != nil {
		t.Fatal(err)
	}
	return s
}

// exec runs each statement, failing the test on the first error.
func exec(t *testing.T, s store.Store, statements ...string) {
	t.Helper()
	for _, q := range statements {
		if err := s.Exec(t.Context(), q, nil); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
