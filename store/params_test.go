package store

import (
	"maps"
	"testing"
)

func TestBindParams(t *testing.T) {
	sql := `SELECT 1 WHERE s = {s:String} AND n = {n : Nullable(String)} AND lc = {lc:LowCardinality(Nullable(String))}
    AND f = {f:FixedString(4)} AND e = {e:Enum8('a' = 1)} AND t >= {t:DateTime64(3, 'UTC')} AND a IN {a:Array(String)}
    AND u = {u:UInt32} AND mixed = {m:String} AND mixed2 = {m:Array(String)}`
	in := Params{"s": `a\`, "n": "a\tb", "lc": "a\nb", "f": `\N`, "e": `\0`, "t": `2026\`, "a": `['a\\']`,
		"u": `1\`, "m": `x\`, "unused": `y\`, "plain": "no escapes"}
	orig := maps.Clone(in)
	got := BindParams(sql, in)
	want := Params{"s": `a\\`, "n": `a\tb`, "lc": `a\nb`, "f": `\\N`, "e": `\\0`, "t": `2026\`, "a": `['a\\']`,
		"u": `1\`, "m": `x\`, "unused": `y\`, "plain": "no escapes"}
	if !maps.Equal(got, want) {
		t.Errorf("BindParams =\n%q\nwant\n%q", got, want)
	}
	if !maps.Equal(in, orig) {
		t.Errorf("BindParams changed its argument: %q", in)
	}
}
