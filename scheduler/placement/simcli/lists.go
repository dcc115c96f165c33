package simcli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Compile-time checks: each list is a flag.Value.
var (
	_ flag.Value = (*Uints)(nil)
	_ flag.Value = (*Floats)(nil)
	_ flag.Value = (*Names)(nil)
)

// Uints is a comma-separated list of whole numbers ("1,2,3"), as a flag.Value.
type Uints []uint64

// Set replaces the list with s's items.
func (u *Uints) Set(s string) error {
	v, err := ParseUints(s)
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// String is the list as Set reads it.
func (u *Uints) String() string {
	if u == nil {
		return ""
	}
	return join(*u, func(v uint64) string { return strconv.FormatUint(v, 10) })
}

// Floats is a comma-separated list of finite numbers ("0.75,0.9"), as a
// flag.Value.
type Floats []float64

// Set replaces the list with s's items.
func (f *Floats) Set(s string) error {
	v, err := ParseFloats(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// String is the list as Set reads it.
func (f *Floats) String() string {
	if f == nil {
		return ""
	}
	return join(*f, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

// Names is a comma-separated list of names ("fgd,best-fit"), as a flag.Value;
// with Allowed set, each name must be one of them.
type Names struct {
	List    []string
	Allowed []string // nil: any name that is not empty
}

// Set replaces List with s's items.
func (n *Names) Set(s string) error {
	v, err := ParseNames(s, n.Allowed)
	if err != nil {
		return err
	}
	n.List = v
	return nil
}

// String is the list as Set reads it.
func (n *Names) String() string {
	if n == nil {
		return ""
	}
	return strings.Join(n.List, ",")
}

// ParseUints reads a comma-separated list of whole numbers.
func ParseUints(s string) ([]uint64, error) {
	return parseList(s, func(item string) (uint64, error) {
		v, err := strconv.ParseUint(item, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%q is too large (at most %d)", item, uint64(math.MaxUint64))
		}
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", item)
		}
		return v, nil
	})
}

// ParseFloats reads a comma-separated list of finite numbers.
func ParseFloats(s string) ([]float64, error) {
	return parseList(s, func(item string) (float64, error) {
		v, err := strconv.ParseFloat(item, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("%q is not a finite number", item)
		}
		return v, nil
	})
}

// ParseNames reads a comma-separated list of names; with allowed not nil, each
// must be one of them.
func ParseNames(s string, allowed []string) ([]string, error) {
	return parseList(s, func(item string) (string, error) {
		if allowed != nil && !slices.Contains(allowed, item) {
			return "", fmt.Errorf("%q is not one of %s", item, strings.Join(allowed, ", "))
		}
		return item, nil
	})
}

// parseList splits s at commas, trims the spaces around each item and reads
// it with parse; an empty item (an empty s included) is an error.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	items := strings.Split(s, ",")
	out := make([]T, 0, len(items))
	for i, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("item %d of %d is empty (want a comma-separated list)", i+1, len(items))
		}
		v, err := parse(item)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func join[T any](vs []T, format func(T) string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = format(v)
	}
	return strings.Join(parts, ",")
}
