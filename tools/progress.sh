#!/usr/bin/env bash
# progress.sh: what `make demo` does on a fresh machine, with elapsed time, and
# nothing when the work is already done (a warm cache stays quiet).
#
#   tools/progress.sh step LABEL CMD [ARGS…]
#       Runs CMD. If it is still running after 3 s, says LABEL, then every 30 s
#       how long it has taken so far (with the size of $PROGRESS_DU, if set), and
#       at the end how long it took.
#   tools/progress.sh build OUT PKG
#       go build -v -o OUT PKG, counting the packages compiled (of those PKG needs)
#       every 15 s; a build from the cache compiles none and prints nothing.
# What it says goes to stderr, so that CMD's own output can be sent elsewhere.
set -uo pipefail
exec 3>&2
say() { echo "$@" >&3; }

start=$SECONDS
elapsed() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
size() { [ -n "${PROGRESS_DU:-}" ] && [ -e "$PROGRESS_DU" ] && printf ', %s in %s' "$(du -sh "$PROGRESS_DU" 2>/dev/null | cut -f1)" "$PROGRESS_DU"; }

step() {
	local label=$1
	shift
	"$@" &
	local pid=$! said=0 next=3
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if kill -0 "$pid" 2>/dev/null && [ $((SECONDS - start)) -ge "$next" ]; then
			if [ "$said" = 0 ]; then
				say "$label …"
				said=1
			else
				say "  … $label: $(elapsed) so far$(size)"
			fi
			next=$((SECONDS - start + 30))
		fi
	done
	wait "$pid"
	local rc=$?
	if [ "$said" = 1 ]; then
		if [ "$rc" = 0 ]; then say "  $label: done in $(elapsed)$(size)"; else say "  $label: failed after $(elapsed)"; fi
	fi
	return "$rc"
}

build() {
	local out=$1 pkg=$2 total
	total=$(go list -deps "$pkg" 2>/dev/null | wc -l)
	go build -v -o "$out" "$pkg" 2>&1 | count "$pkg" "$total"
	return "${PIPESTATUS[0]}"
}

# count reads go build -v: each package it compiles is one import path a line;
# anything else (a compiler error, a "# pkg" heading) is passed through.
count() {
	local pkg=$1 total=$2 n=0 said=0 last=0 line
	while IFS= read -r line; do
		if [[ ! "$line" =~ ^[^\ \#:]+$ ]]; then
			echo "$line" >&2
			continue
		fi
		n=$((n + 1))
		if [ "$said" = 0 ] && [ "$n" -ge 20 ]; then
			say "compiling $pkg: $total packages with the standard library, most not in the build cache (a first build takes minutes, later ones seconds) …"
			said=1 last=$SECONDS
		elif [ "$said" = 1 ] && [ $((SECONDS - last)) -ge 15 ]; then
			say "  … compiled $n packages in $(elapsed) (now $line)"
			last=$SECONDS
		fi
	done
	[ "$said" = 0 ] || say "  compiled $n packages in $(elapsed)"
}

case "${1:-}" in
step) shift; step "$@" ;;
build) shift; build "$@" ;;
*) echo "usage: $0 step LABEL CMD [ARGS…] | build OUT PKG" >&2; exit 2 ;;
esac
