#!/usr/bin/env bash
# Whole-tool benchmark: runs sse-latency on loopback (-t equal to -L, so no
# calibration batch) at several concurrencies and prints one Markdown table
# row per run: emit->recv p50/p99, inter-token p1/p50/p99, the tool's own
# emission lateness p50/p99, CPU seconds per million tokens and peak RSS.
#
#   bench/run.sh              # the table of docs/PERF.md (each run REPEAT times, default 3)
#   bench/run.sh 100 500      # only these -c values (-n 200)
#   REPEAT=1 bench/run.sh     # one pass
#
# Traffic stays on 127.0.0.1; every run is bounded (-r = -c, or fixed -r).
# Run it on an otherwise idle machine: the figures are timing measurements.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
go build -o "$out/sse-latency" ./cmd/sse-latency
bin="$out/sse-latency"
port=${BENCH_PORT:-18090}

# run NAME ARGS... : one measurement, one table row.
run() {
	local name=$1; shift
	local log="$out/$name.log" tm="$out/$name.time"
	/usr/bin/time -v -o "$tm" "$bin" -L "127.0.0.1:$port" -t "127.0.0.1:$port" -q -v "$@" >"$log" 2>&1 || true
	awk -v name="$name" -v args="$*" -v tm="$tm" '
		/^gw: inter-token p1=/ {
			for (i = 1; i <= NF; i++) {
				split($i, kv, "="); gsub(/ms;?$/, "", kv[2])
				if ($i ~ /^p1=/) it1 = kv[2]; else if ($i ~ /^p50=/ && !it50) it50 = kv[2]
				else if ($i ~ /^p99=/ && !it99) it99 = kv[2]
				else if ($i ~ /^p50=/) er50 = kv[2]; else if ($i ~ /^p99=/) er99 = kv[2]
			}
		}
		/^=== gateway:/ { req = $3; ok = $5; failed = $7; tokens = $9 }
		/^server: .* tokens emitted/ {
			for (i = 1; i <= NF; i++) { split($i, kv, "="); gsub(/ms$/, "", kv[2]); if ($i ~ /^p50=/) l50 = kv[2]; if ($i ~ /^p99=/) l99 = kv[2] }
		}
		/^warning: sse-latency fell behind/ { warn = "yes" }
		END {
			while ((getline line < tm) > 0) {
				if (line ~ /User time/) { split(line, a, ": "); cpu += a[2] }
				if (line ~ /System time/) { split(line, a, ": "); cpu += a[2]; sys = a[2] }
				if (line ~ /Maximum resident set size/) { split(line, a, ": "); rss = a[2] / 1024 }
			}
			printf "| `%s` | %s/%s | %s / %s | %s / %s / %s | %s / %s | %.2f (sys %.0f%%) | %.0f | %s |\n",
				args, ok, req, er50, er99, it1, it50, it99, l50, l99,
				(tokens > 0 ? cpu / tokens * 1e6 : 0), (cpu > 0 ? sys / cpu * 100 : 0), rss, (warn ? warn : "no")
		}' "$log"
}

echo "| command (after \`-L/-t 127.0.0.1:$port -q -v\`) | ok/requests | emit->recv p50 / p99 ms | inter-token p1 / p50 / p99 ms | emission lateness p50 / p99 ms | CPU s per 1M tokens | peak RSS MB | overload warning |"
echo "|---|---|---|---|---|---|---|---|"
repeat=${REPEAT:-3}
if [ $# -eq 0 ]; then
	for i in $(seq "$repeat"); do run c1 -c 1 -r 1 -n 1000; done
	for c in 100 500 800 4000; do
		for i in $(seq "$repeat"); do run "c$c" -c "$c" -r "$c" -n 200; done
	done
	run rss-r1000 -c 100 -r 1000 -n 200 -d 1
	run rss-r10000 -c 100 -r 10000 -n 200 -d 1
else
	for c in "$@"; do
		for i in $(seq "$repeat"); do run "c$c" -c "$c" -r "$c" -n 200; done
	done
fi
