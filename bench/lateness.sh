#!/usr/bin/env bash
# The tool's own emission lateness (the run document's self.emission_lateness:
# how late each token was written against its deadline, early ones counted
# as 0) of two binaries side by side: -t equal to -L, -r = -c, -n 200, 5 ms
# between tokens, loopback; OLD, NEW alternating REPEAT times (default 5)
# at each -c of CONFIGS (default "100 200 300"), then the medians of p50,
# p90, p99 per binary and -c. Ports from BENCH_PORT (default 24100) up, one
# per run, never reused; every run bounded by `timeout` 120 s.
#
#   bench/lateness.sh OLD_BINARY NEW_BINARY
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
	exit 2
fi
repeat=${REPEAT:-5}
configs=${CONFIGS:-"100 200 300"}
port=${BENCH_PORT:-24100}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| binary | -c | lateness p50 ms | p90 | p99 | load |"
echo "|---|---|---|---|---|---|"
for _ in $(seq "$repeat"); do
	for c in $configs; do
		for b in "$1" "$2"; do
			load=$(cut -d' ' -f1 /proc/loadavg)
			timeout 120 "$b" -L 127.0.0.1:$port -t 127.0.0.1:$port -l -r "$c" -c "$c" -n 200 -q \
				--json "$tmp/run.json" >/dev/null 2>&1 || true
			port=$((port + 1))
			row=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))["self"]["emission_lateness"]
print(*("%.3f" % d[k] for k in ("p50_ms", "p90_ms", "p99_ms")))' "$tmp/run.json")
			echo "$(basename "$b") $c $row $load" | tee -a "$tmp/rows" | awk '{printf "| %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6}'
		done
	done
done
echo
echo "Medians:"
echo "| binary | -c | lateness p50 ms | p90 | p99 |"
echo "|---|---|---|---|---|"
sort -k2,2n -k1,1 "$tmp/rows" | awk '
function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function flush() { if (n) printf "| %s | %s | %.3f | %.3f | %.3f |\n", kb, kc, med(p50, n), med(p90, n), med(p99, n); n = 0 }
{ if ($1 != kb || $2 != kc) { flush(); kb = $1; kc = $2 } n++; p50[n] = $3; p90[n] = $4; p99[n] = $5 }
END { flush() }'
