#!/usr/bin/env bash
# fuzz.sh GO FUZZTIME: a short run of every fuzz target in the repository, found
# in the tracked test files (func FuzzX(f *testing.F)), so a new one is never
# left out of `make fuzz`.
set -euo pipefail
go=${1:-go}
fuzztime=${2:-10s}
cd "$(git rev-parse --show-toplevel)"
targets=$(git ls-files '*_test.go' | xargs grep -H -o '^func Fuzz[A-Za-z0-9_]*(' | sed 's/:func /\t/; s/($//' | sort -u)
n=$(printf '%s\n' "$targets" | grep -c . || true)
i=0
while IFS=$'\t' read -r file name; do
	[ -n "$name" ] || continue
	i=$((i + 1))
	dir=./$(dirname "$file")/
	echo "fuzz $i/$n: $name in $dir"
	"$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir"
done <<< "$targets"
