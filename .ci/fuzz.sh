#!/usr/bin/env bash
# Runs every native fuzz target of the module for a short, bounded time, one
# after the other, so that a parser regression surfaces in CI. The seed
# corpora (in-code f.Add seeds and testdata/fuzz/<FuzzName>/) also run as
# plain tests in `go test ./...`; this adds a few seconds of mutation each.
#
#   FUZZTIME      time per target (default 8s; go test -fuzztime syntax)
#   FUZZPARALLEL  fuzzing workers per target (default: go test's, GOMAXPROCS)
#   FUZZ_GOTOOLCHAIN  the Go toolchain that fuzzes (default go1.27.3; the
#                 go command fetches it from the module proxy, 76 MB once)
#
# Why a newer toolchain than the module's: Go 1.26's fuzzing coordinator
# reports its own -fuzztime deadline as a failure ("context deadline
# exceeded", no input saved) when the deadline fires between cancelling a
# context and its child, which a busy machine widens (go.dev/issue/75804,
# fixed in Go 1.27; CI failed on it twice, issue 25). The tests, vet and
# staticcheck keep the module's toolchain; only the mutation step moves.
#
# A failing target stops the script with its name and the failing input,
# which go test has written under the package's testdata/fuzz/<FuzzName>/:
# check it in, fix the parser, and the input stays a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-8s}"
export GOTOOLCHAIN="${FUZZ_GOTOOLCHAIN:-go1.27.3}"
echo "fuzz: $(go version)"
parallel=()
[ -n "${FUZZPARALLEL:-}" ] && parallel=(-parallel "$FUZZPARALLEL")

# "pkgdir name" for every func FuzzXxx(f *testing.F) in a _test.go file.
targets=$(git ls-files --cached --others --exclude-standard -- '*_test.go' | sed 's#^#./#' |
	{ xargs grep -H -o '^func Fuzz[A-Za-z0-9_]*(' || true; } |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' | sort -u)
if [ -z "$targets" ]; then
	echo "fuzz: no fuzz targets found"; exit 1
fi

n=0
start=$SECONDS
while read -r dir name; do
	n=$((n + 1))
	echo "-- fuzz $dir $name ($fuzztime)"
	log=$(mktemp)
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "${parallel[@]}" "$dir" </dev/null 2>&1 | tee "$log"; then
		echo "FAIL: fuzz target $name in $dir (a failing input, if one was found, is saved under $dir/testdata/fuzz/$name/)"
		rm -f "$log"
		exit 1
	fi
	# One coordinator per process: a TestMain that calls m.Run more than
	# once starts fuzzing again in the same process, and the second run
	# races the coordinator's own deadline (issue 25).
	starts=$(grep -c 'gathering baseline coverage: 0/' "$log" || true)
	rm -f "$log"
	if [ "$starts" -ne 1 ]; then
		echo "FAIL: fuzz target $name in $dir started fuzzing $starts times in one process (want 1: does a TestMain call m.Run more than once under -test.fuzz?)"
		exit 1
	fi
done <<<"$targets"
echo "fuzz: $n targets ok in $((SECONDS - start))s"
