#!/usr/bin/env bash
# Side-by-side benchmark of two sse-latency binaries (or the reference C tool
# and ours): both run alternately — OLD, NEW, OLD, NEW… REPEAT times — on
# loopback with -t equal to -L (no calibration batch), -r equal to -c, 5 ms
# between tokens, -q, at each concurrency; the script prints one Markdown row
# per run, then the medians per binary and concurrency, the ratios NEW/OLD of
# those medians, and each binary's clean capacity.
#
#   bench/compare.sh OLD_BINARY NEW_BINARY
#   REPEAT=5 bench/compare.sh /work/ref/sse-latency-ref ./sse-latency
#   CONFIGS="100 500" bench/compare.sh old new     # only these -c values
#   NEW_ARGS="--gateway-pid $$" bench/compare.sh old new  # extra arguments for NEW only
#
# Columns:
#   emit->recv p50/p99    ms, the "emit->recv (tokens)" line of the report
#   inter-token p50/p99   ms, the "inter-token (client)" line; at -c 1 a Go
#                         binary also gives p1 (its -v line), the reference
#                         has none
#   CPU us/token          user+system time of the whole process (server and
#                         client, from /usr/bin/time -v) divided by the tokens
#                         received (the "=== gateway" title's count)
#   RSS MB                peak resident set size (/usr/bin/time -v)
#   ok/failed, warning    the title's counts; whether the Go tool warned that
#                         it fell behind its own emission schedule
#   load                  the 1-minute load average when the run started:
#                         figures taken on a busy machine are noise
#
# Clean capacity (issue 21): the largest -c of 100 200 300 400 500 600 800
# 1000 such that at it and at every smaller one of those that ran, the median
# inter-token p50 is 5.00 ± 0.05 ms and the tool kept its own schedule — the
# Go tool did not warn (its warning means emission lateness p99 above 1 ms)
# in most runs. The reference prints no lateness: for it only the p50 counts.
# "none" when -c 100 is not clean; "-" when -c 100 did not run.
#
# -c 1 runs -n 1000 tokens, the others -n 200. Every run is bounded by
# `timeout` (TIMEOUT seconds, default 300). Traffic stays on 127.0.0.1. The
# reference only knows -L -t -r -c -n -T -d -w -l -q -v -h, so nothing else
# is passed to either binary (except -v to a Go binary at -c 1, for p1, and
# NEW_ARGS, split as the shell splits words, to NEW: e.g. to time the cost
# accounting of a gateway process against a binary without it).
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
	exit 2
fi
old=$1 new=$2
for b in "$old" "$new"; do
	if [ ! -x "$b" ]; then
		echo "$0: $b is not an executable" >&2
		exit 2
	fi
done
repeat=${REPEAT:-3}
read -r -a new_args <<<"${NEW_ARGS:-}"
configs=${CONFIGS:-"1 100 200 300 400 500 600 800 1000 4000"}
port=${BENCH_PORT:-18190}
limit=${TIMEOUT:-300}
label_old=${LABEL_OLD:-$(basename "$old")}
label_new=${LABEL_NEW:-$(basename "$new")}
if [ "$label_old" = "$label_new" ]; then
	label_old="old:$label_old" label_new="new:$label_new"
fi

if [ ! -x /usr/bin/time ]; then
	echo "$0: /usr/bin/time (GNU time, for CPU and peak RSS) is missing: installing the Debian package 'time'" >&2
	if ! { apt-get install -y time >&2 || { apt-get update >&2 && apt-get install -y time >&2; }; }; then
		echo "$0: could not install it; run: apt-get install time" >&2
		exit 1
	fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows="$work/rows"
: >"$rows"

# isgo BINARY: whether it is the Go tool (the reference has no --version).
isgo() { "$1" --version >/dev/null 2>&1; }

# run LABEL BINARY C N: one measurement, appended to $rows as
# label c p50 p99 it50 it99 itp1 cpu rss ok failed warn load
run() {
	local label=$1 bin=$2 c=$3 n=$4
	local log="$work/log" tm="$work/time" load args
	load=$(cut -d' ' -f1 /proc/loadavg)
	port=$((port + 1))
	args=(-L "127.0.0.1:$port" -t "127.0.0.1:$port" -r "$c" -c "$c" -n "$n" -q)
	if [ "$c" = 1 ] && isgo "$bin"; then
		args+=(-v)
	fi
	if [ "$bin" = "$new" ]; then
		args+=("${new_args[@]}")
	fi
	timeout "$limit" /usr/bin/time -v -o "$tm" "$bin" "${args[@]}" >"$log" 2>&1 || true
	awk -v label="$label" -v c="$c" -v load="$load" -v tm="$tm" '
		function field(name,   i) {
			for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) { v = substr($i, length(name) + 2); sub(/ms;?$/, "", v); return v }
			return "-"
		}
		/^=== gateway:/ { ok = $5; failed = $7; tokens = $9 }
		/^emit->recv \(tokens\)/ { p50 = field("p50"); p99 = field("p99") }
		/^inter-token \(client\)/ { it50 = field("p50"); it99 = field("p99") }
		/^gw: inter-token p1=/ { itp1 = field("p1") }
		/^warning: sse-latency fell behind/ { warn = "yes" }
		END {
			while ((getline line < tm) > 0) {
				if (line ~ /User time/ || line ~ /System time/) { split(line, a, ": "); cpu += a[2] }
				if (line ~ /Maximum resident set size/) { split(line, a, ": "); rss = a[2] / 1024 }
			}
			if (ok == "") { ok = 0; failed = "?" }
			printf "%s %s %s %s %s %s %s %s %.0f %s %s %s %s\n", label, c, (p50 ? p50 : "-"), (p99 ? p99 : "-"),
				(it50 ? it50 : "-"), (it99 ? it99 : "-"), (itp1 ? itp1 : "-"),
				(tokens > 0 ? sprintf("%.2f", cpu / tokens * 1e6) : "-"), rss, ok, failed, (warn ? warn : "no"), load
		}' "$log" >>"$rows"
	tail -n 1 "$rows" | awk '{ printf "| %s | %s | %s / %s | %s / %s%s | %s | %s | %s/%s | %s | %s |\n",
		$2, $1, $3, $4, $5, $6, ($7 != "-" ? " (p1 " $7 ")" : ""), $8, $9, $10, $11, $12, $13 }'
}

echo "Machine: $(nproc) CPUs, $(uname -sr); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OLD = $label_old ($old)"
echo "NEW = $label_new ($new${NEW_ARGS:+ $NEW_ARGS})"
echo
echo "| -c | binary | emit->recv p50 / p99 ms | inter-token p50 / p99 ms | CPU us/token | RSS MB | ok/failed | warning | load |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in $configs; do
	n=200
	if [ "$c" = 1 ]; then n=1000; fi
	for i in $(seq "$repeat"); do
		run "$label_old" "$old" "$c" "$n"
		run "$label_new" "$new" "$c" "$n"
	done
done

echo
echo "Medians over $repeat runs (load at the end: $(cut -d' ' -f1-3 /proc/loadavg)):"
echo
echo "| -c | binary | emit->recv p50 / p99 ms | inter-token p50 / p99 ms | CPU us/token | RSS MB | runs with failures |"
echo "|---|---|---|---|---|---|---|"
for c in $configs; do
	for label in "$label_old" "$label_new"; do
		awk -v label="$label" -v c="$c" '
			function median(list,   n, a, i, j, t) {
				n = split(list, a, " ")
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
				if (n == 0) return "-"
				return (n % 2) ? a[(n + 1) / 2] : sprintf("%.3g", (a[n / 2] + a[n / 2 + 1]) / 2)
			}
			function add(name, v) { if (v != "-") col[name] = col[name] " " v }
			$1 == label && $2 == c {
				add("p50", $3); add("p99", $4); add("it50", $5); add("it99", $6); add("cpu", $8); add("rss", $9)
				if ($11 != "0") bad++
			}
			END {
				printf "| %s | %s | %s / %s | %s / %s | %s | %s | %d |\n", c, label, median(col["p50"]), median(col["p99"]),
					median(col["it50"]), median(col["it99"]), median(col["cpu"]), median(col["rss"]), bad
			}' "$rows"
	done
done

# The medians again, as label c p99 it50 cpu rss warned runs, for the ratios
# and the clean capacity.
awk '
	function median(list,   n, a, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		if (n == 0) return "-"
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		k = $1 SUBSEP $2
		if (!(k in runs)) order[++keys] = k
		runs[k]++
		if ($4 != "-") p99[k] = p99[k] " " $4
		if ($5 != "-") it50[k] = it50[k] " " $5
		if ($8 != "-") cpu[k] = cpu[k] " " $8
		rss[k] = rss[k] " " $9
		if ($12 == "yes") warned[k]++
	}
	END {
		for (i = 1; i <= keys; i++) {
			k = order[i]; split(k, lc, SUBSEP)
			printf "%s %s %s %s %s %s %d %d\n", lc[1], lc[2], median(p99[k]), median(it50[k]), median(cpu[k]), median(rss[k]), warned[k], runs[k]
		}
	}' "$rows" >"$work/medians"

echo
echo "Ratios NEW/OLD of the medians ($label_new / $label_old; below 1: NEW is lower):"
echo
echo "| -c | CPU us/token | emit->recv p99 | RSS |"
echo "|---|---|---|---|"
for c in $configs; do
	awk -v c="$c" -v o="$label_old" -v n="$label_new" '
		function ratio(a, b) { return (a == "-" || b == "-" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
		$2 == c && $1 == o { op99 = $3; ocpu = $5; orss = $6 }
		$2 == c && $1 == n { np99 = $3; ncpu = $5; nrss = $6 }
		END { printf "| %s | %s | %s | %s |\n", c, ratio(ncpu, ocpu), ratio(np99, op99), ratio(nrss, orss) }' "$work/medians"
done

echo
echo "Clean capacity (median inter-token p50 5.00 ± 0.05 ms and no overload warning in most runs, at every -c up to it of 100 200 300 400 500 600 800 1000):"
echo
for label in "$label_old" "$label_new"; do
	awk -v label="$label" -v configs="$configs" '
		$1 == label { it50[$2] = $4; warned[$2] = $7; runs[$2] = $8 }
		END {
			cap = "-"
			n = split("100 200 300 400 500 600 800 1000", clean, " ")
			for (i = 1; i <= n; i++) {
				c = clean[i]
				if (!(c in runs)) continue
				ok = it50[c] != "-" && it50[c] >= 4.95 && it50[c] <= 5.05 && warned[c] * 2 < runs[c]
				if (!ok) break
				cap = c
			}
			if (cap == "-" && (100 in runs)) cap = "none"
			printf "* %s: %s\n", label, cap
		}' "$work/medians"
done
