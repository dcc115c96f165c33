package simcli

import (
	"flag"
	"strings"
)

// Seeds registers the drivers' -seed flag on fs: the random seeds to run, a
// comma-separated list of whole numbers, defaulting to defaults.
func Seeds(fs *flag.FlagSet, defaults ...uint64) *Uints {
	u := Uints(defaults)
	fs.Var(&u, "seed", "`seeds`, comma-separated")
	return &u
}

// NamesVar registers a Names flag on fs with the default list defaults; with
// allowed not nil, usage ends with the names it takes.
func NamesVar(fs *flag.FlagSet, name string, defaults, allowed []string, usage string) *Names {
	n := &Names{List: defaults, Allowed: allowed}
	if allowed != nil {
		usage += " (any of " + strings.Join(allowed, ", ") + ")"
	}
	fs.Var(n, name, usage)
	return n
}
