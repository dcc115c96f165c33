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

// rowReader reads typed cells of a result and keeps the first error, so that
// reading a row is a list of assignments followed by one check.
type rowReader struct {
	res *store.Result
	err error
}

func (r *rowReader) str(i int, col string) string {
	s, err := r.res.String(i, col)
	if err != nil && r.err == nil {
		r.err = err
	}
	return s
}

func (r *rowReader) float(i int, col string) float64 {
	f, err := r.res.Float(i, col)
	if err != nil && r.err == nil {
		r.err = err
	}
	return f
}

func (r *rowReader) int(i int, col string) int64 {
	n, err := r.res.Int(i, col)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n
}

func (r *rowReader) time(i int, col string) time.Time {
	j := r.res.Index(col)
	if j < 0 {
		if r.err == nil {
			_, r.err = r.res.String(i, col) // the store's "no column" error
		}
		return time.Time{}
	}
	t, _ := r.res.Rows[i][j].(time.Time)
	return t.UTC()
}

func (r *rowReader) strings(i int, col string) []string {
	j := r.res.Index(col)
	if j < 0 {
		if r.err == nil {
			_, r.err = r.res.String(i, col)
		}
		return nil
	}
	arr, _ := r.res.Rows[i][j].([]any)
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		out = append(out, store.FormatValue(v))
	}
	return out
}

func (r *rowReader) floats(i int, col string) []float64 {
	j := r.res.Index(col)
	if j < 0 {
		if r.err == nil {
			_, r.err = r.res.String(i, col)
		}
		return nil
	}
	arr, _ := r.res.Rows[i][j].([]any)
	out := make([]float64, 0, len(arr))
	for _, v := range arr {
		f, ok := v.(float64)
		if !ok {
			f = math.NaN()
		}
		out = append(out, f)
	}
	return out
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
