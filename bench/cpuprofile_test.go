package bench

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// cpuByLabel is a CPU profile's samples summed by the value of one pprof label:
// cpu nanoseconds per label value ("" for none), the samples taken on threads
// Go does not run (runtime._ExternalCode: a native library's own threads) apart,
// and, per label value, the nanoseconds under each function of the module
// nearest the leaf (where in gpupool's own code a component's CPU goes).
type cpuByLabel struct {
	byValue  map[string]int64
	external int64
	frames   map[string]map[string]int64 // label value → function → nanoseconds
}

// Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto).
const (
	profSample   = 2
	profLocation = 4
	profFunction = 5
	profStrings  = 6

	sampleLocation = 1
	sampleValue    = 2
	sampleLabel    = 3
	labelKey       = 1
	labelStr       = 2
	locationID     = 1
	locationLine   = 4
	lineFunction   = 1
	functionID     = 1
	functionName   = 2
)

// rawSample is a sample before the string table is read (it comes last).
type rawSample struct {
	locs   []uint64
	values []int64
	labels [][2]int64 // key, str: string table indexes
}

// profileMsg is the parts of a profile cpuByLabel needs.
type profileMsg struct {
	samples   []rawSample
	locFuncs  map[uint64][]uint64 // location → function ids, leaf first
	funcNames map[uint64]int64    // function → string index
	strings   []string
}

// decodeCPUProfile reads a gzipped CPU profile (runtime/pprof's) and sums its
// cpu values by the label key, or, for a sample without it, by aliases[k] for
// a label k it has (a library that sets labels of its own replaces the
// caller's: nats-server's goroutines); module is the import path prefix whose
// functions frames counts.
func decodeCPUProfile(gz []byte, key string, aliases map[string]string, module string) (cpuByLabel, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return cpuByLabel{}, fmt.Errorf("cpu profile: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return cpuByLabel{}, fmt.Errorf("cpu profile: %w", err)
	}
	p := profileMsg{locFuncs: map[uint64][]uint64{}, funcNames: map[uint64]int64{}}
	if err := eachField(data, p.field); err != nil {
		return cpuByLabel{}, fmt.Errorf("cpu profile: %w", err)
	}
	return p.sum(key, aliases, module), nil
}

// sum adds the samples' last value (cpu nanoseconds) by the key's value.
func (p *profileMsg) sum(key string, aliases map[string]string, module string) cpuByLabel {
	out := cpuByLabel{byValue: map[string]int64{}, frames: map[string]map[string]int64{}}
	str := func(i int64) string {
		if i < 0 || int(i) >= len(p.strings) {
			return ""
		}
		return p.strings[i]
	}
	for _, s := range p.samples {
		if len(s.values) == 0 {
			continue
		}
		ns := s.values[len(s.values)-1]
		var names []string
		for _, l := range s.locs {
			for _, f := range p.locFuncs[l] {
				names = append(names, str(p.funcNames[f]))
			}
		}
		if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "runtime._") && strings.HasSuffix(n, "ExternalCode") }) {
			out.external += ns
			continue
		}
		v, alias := "", ""
		for _, l := range s.labels {
			if k := str(l[0]); k == key {
				v = str(l[1])
			} else if a, ok := aliases[k]; ok {
				alias = a
			}
		}
		v = cmp.Or(v, alias)
		out.byValue[v] += ns
		for _, n := range names {
			if strings.HasPrefix(n, module) {
				if out.frames[v] == nil {
					out.frames[v] = map[string]int64{}
				}
				out.frames[v][n] += ns
				break
			}
		}
	}
	return out
}

func (p *profileMsg) field(num protowire.Number, typ protowire.Type, b []byte) error {
	switch num {
	case profSample:
		var s rawSample
		err := eachField(b, func(n protowire.Number, t protowire.Type, v []byte) error {
			switch n {
			case sampleLocation:
				return varints(t, v, func(x uint64) { s.locs = append(s.locs, x) })
			case sampleValue:
				return varints(t, v, func(x uint64) { s.values = append(s.values, int64(x)) })
			case sampleLabel:
				var k, sv int64
				err := eachField(v, func(n protowire.Number, t protowire.Type, v []byte) error {
					return varints(t, v, func(x uint64) {
						switch n {
						case labelKey:
							k = int64(x)
						case labelStr:
							sv = int64(x)
						}
					})
				})
				s.labels = append(s.labels, [2]int64{k, sv})
				return err
			}
			return nil
		})
		p.samples = append(p.samples, s)
		return err
	case profLocation:
		return p.location(b)
	case profFunction:
		var id uint64
		var name int64
		err := eachField(b, func(n protowire.Number, t protowire.Type, v []byte) error {
			return varints(t, v, func(x uint64) {
				switch n {
				case functionID:
					id = x
				case functionName:
					name = int64(x)
				}
			})
		})
		p.funcNames[id] = name
		return err
	case profStrings:
		if typ != protowire.BytesType {
			return fmt.Errorf("string table entry of wire type %d", typ)
		}
		p.strings = append(p.strings, string(b))
	}
	return nil
}

// location records a location's functions, leaf (inlined) first.
func (p *profileMsg) location(b []byte) error {
	var id uint64
	var funcs []uint64
	err := eachField(b, func(n protowire.Number, t protowire.Type, v []byte) error {
		switch n {
		case locationID:
			return varints(t, v, func(x uint64) { id = x })
		case locationLine:
			return eachField(v, func(n protowire.Number, t protowire.Type, v []byte) error {
				if n != lineFunction {
					return nil
				}
				return varints(t, v, func(x uint64) { funcs = append(funcs, x) })
			})
		}
		return nil
	})
	p.locFuncs[id] = funcs
	return err
}

// eachField calls f with each field of the message b; a varint field's value
// comes as its encoding, a length-delimited one's as its contents.
func eachField(b []byte, f func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			s, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			v, n = s, m
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			v = b[:n]
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// varints calls f with each value of a varint field, packed or not.
func varints(typ protowire.Type, b []byte, f func(uint64)) error {
	if typ != protowire.BytesType && typ != protowire.VarintType {
		return nil
	}
	for len(b) > 0 {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		f(x)
		b = b[n:]
	}
	return nil
}
