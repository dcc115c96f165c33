package findings

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/store"
)

// tsLayout is how a time travels as a DateTime64(3, 'UTC') query parameter.
const tsLayout = "2006-01-02 15:04:05.000"

func tsParam(t time.Time) string        { return t.UTC().Format(tsLayout) }
func floatParam(f float64) string       { return strconv.FormatFloat(f, 'g', -1, 64) }
func intParam(n int64) string           { return strconv.FormatInt(n, 10) }
func durMsParam(d time.Duration) string { return intParam(d.Milliseconds()) }

// arrayParam is an Array(String) query parameter (store.ArrayParam).
func arrayParam(ss []string) string { return store.ArrayParam(ss) }

// activeExpr is a GPU sample's engine activity: gr_engine_active, or sm_active and
// then gpu_util on sources without the profiling field (NVML-only nodes).
const activeExpr = `coalesce(gr_engine_active, sm_active, gpu_util, 0)`

// poolGroup is the set of pools that share one detector's settings.
type poolGroup[T any] struct {
	cfg T
	// pools with include set are the group's pools; with include unset, the group
	// is every pool except these.
	pools   []string
	include bool
}

// has reports whether pool belongs to the group.
func (g poolGroup[T]) has(pool string) bool { return slices.Contains(g.pools, pool) == g.include }

// params returns the group's pool selection parameters, for SQL that selects pools
// itself with has({pools}, pool) = {in_pools}.
func (g poolGroup[T]) params(p store.Params) store.Params {
	p["pools"] = arrayParam(g.pools)
	p["in_pools"] = strconv.FormatBool(g.include)
	return p
}

// poolGroups splits the pools by one detector's settings: the default group (every
// pool not configured otherwise), then one group per distinct setting among the
// configured pools. Groups whose detector is disabled are dropped, so each enabled
// setting costs one query per pass however many pools share it.
func poolGroups[T any](c Config, get func(Thresholds) T, enabled func(T) bool) []poolGroup[T] {
	def := get(c.Defaults)
	var others []poolGroup[T]
	var differing []string
	for _, name := range slices.Sorted(maps.Keys(c.Pools)) {
		v := get(c.Pools[name])
		if reflect.DeepEqual(v, def) {
			continue
		}
		differing = append(differing, name)
		found := false
		for i := range others {
			if reflect.DeepEqual(others[i].cfg, v) {
				others[i].pools = append(others[i].pools, name)
				found = true
				break
			}
		}
		if !found {
			others = append(others, poolGroup[T]{cfg: v, pools: []string{name}, include: true})
		}
	}
	var out []poolGroup[T]
	if enabled(def) {
		out = append(out, poolGroup[T]{cfg: def, pools: differing, include: false})
	}
	for _, g := range others {
		if enabled(g.cfg) {
			out = append(out, g)
		}
	}
	return out
}

// rowReader reads a result's cells by row index with store.Rows' rules (a
// missing column or a cell of the wrong type is an error, the first kept in err;
// NULL text, integers, times and arrays are their zero values; NaN stays NaN),
// with one choice of the detectors' own: a NULL number is NaN, not 0 (a figure
// the source did not report, which evidence drops and the rules skip).
type rowReader struct {
	res  *store.Result
	err  error
	rows *store.Rows
}

// at positions the reader at row i.
func (r *rowReader) at(i int) *store.Rows {
	if r.rows == nil {
		r.rows = store.Read(r.res, "findings query")
	}
	return r.rows.At(i)
}

// keep records the reader's first error in err.
func (r *rowReader) keep() {
	if r.err == nil {
		r.err = r.rows.Err()
	}
}

func (r *rowReader) str(i int, col string) string {
	defer r.keep()
	return r.at(i).Str(col)
}

func (r *rowReader) float(i int, col string) float64 {
	defer r.keep()
	return r.at(i).FloatOr(col, math.NaN())
}

func (r *rowReader) int(i int, col string) int64 {
	defer r.keep()
	return r.at(i).Int(col)
}

func (r *rowReader) time(i int, col string) time.Time {
	defer r.keep()
	return r.at(i).Time(col)
}

func (r *rowReader) strings(i int, col string) []string {
	defer r.keep()
	return r.at(i).Strs(col)
}

// floats is an Array of numbers; a NULL element is NaN.
func (r *rowReader) floats(i int, col string) []float64 {
	defer r.keep()
	return r.at(i).Floats(col)
}

// evidence builds an evidence map, dropping NaN (a figure the source did not
// report) and rounding to what is worth reading.
func evidence(kv ...any) map[string]float64 {
	m := make(map[string]float64, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		var f float64
		switch x := kv[i+1].(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		case int:
			f = float64(x)
		case uint32:
			f = float64(x)
		}
		if f != f || math.IsInf(f, 0) {
			continue
		}
		if math.Abs(f) < 10 {
			f = round3(f)
		} else {
			f = math.Round(f*10) / 10
		}
		m[kv[i].(string)] = f
	}
	return m
}
