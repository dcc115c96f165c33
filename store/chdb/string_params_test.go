// This file is named to sort after store_test.go: TestOpenMissingLibrary needs a
// process that has not loaded the library yet.

package chdb_test

import (
	"strings"
	"testing"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestStringParamsLiteral: a string parameter is the string a user typed, a
// trailing backslash, a tab or a newline included, never a parse error or
// another value.
func TestStringParamsLiteral(t *testing.T) {
	s := chdbtest.Open(t)
	for _, v := range []string{`a\`, `\`, "a\tb", "a\nb", "a\rb", `a\nb`, `\N`, `\0`, `a\\b`, "a'b", "a\x00b", "%_", strings.Repeat(`x\`, 5000)} {
		for _, typ := range []string{"String", "Nullable(String)", "LowCardinality(String)"} {
			sql := "SELECT {v:" + typ + "} AS v, {v:" + typ + "} = {w:String} AS same"
			res, err := s.Query(t.Context(), sql, store.Params{"v": v, "w": v})
			if err != nil {
				t.Errorf("%s %.20q: %.300v", typ, v, err)
				continue
			}
			if got := store.FormatValue(res.Rows[0][0]); got != v || store.FormatValue(res.Rows[0][1]) != "1" {
				t.Errorf("%s %.20q: read back %.20q (same %v)", typ, v, got, res.Rows[0][1])
			}
		}
	}
}
