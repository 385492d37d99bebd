#!/usr/bin/env bash
# TLS against plain HTTP/1.1, two binaries side by side, in the setup of
# issue 28: one server process (sse-latency -L, with --control so that the
# client reads its emission times) and a separate client process (-l,
# --server) with -r = -c, -n 200, 5 ms between tokens, loopback. Runs
# alternate OLD, NEW for each path (plain, tls) and concurrency, REPEAT
# times (default 3), then prints the medians per binary, path and -c.
#
#   bench/tls.sh OLD_BINARY NEW_BINARY
#   CONFIGS="100" MODES="plain tls plaingo tlsgo" bench/tls.sh old new
#   CLIENT_ARGS="-T 1000" bench/tls.sh old new   # extra client arguments, both binaries
#
# Paths: plain (http, --engine auto), tls (https: --tls-self-signed server,
# --insecure client, --engine auto), h2c (http, --h2c), h2 (https as tls,
# --http2), h3 (https as tls, --http3 on both: the server serves HTTP/3 on
# the UDP port of its listen address), and plaingo, tlsgo, h2cgo, h2go (the same on --engine
# goroutine), h2cmuxN (h2c on the goroutine engine with -k --streams-per-conn N: the -c
# slots share -c/N connections, N streams each; N = 1 is one stream per kept connection), and
# h2cloopmuxN (the same on --engine epoll: the loops multiplex too).
# TOKENS (default 200) is -n, the tokens of each stream; with two counts (TOKENS="200 1000") every
# run is made at both and a last table gives each path's marginal CPU per token,
# (CPU at the larger count - CPU at the smaller) / (c * the difference): the per-token
# path's cost, with the handshakes, connections, start-up and teardown that both counts
# pay taken out.
# OLD and NEW may be the same binary: each run is then made once. Columns: emit->recv p50/p99 (the report's
# "emit->recv (tokens)" line), client and server CPU per token
# ((user+sys)/tokens, /usr/bin/time), the 1-minute load when the run
# started. CLIENT_ARGS, split as the shell splits words, goes to every
# client (e.g. -T 1000: the first token after every handshake of the
# batch). Every run is bounded by `timeout` (TIMEOUT seconds, default
# 120); traffic stays on 127.0.0.1, ports from BENCH_PORT (default 20100)
# up, two per run, never reused.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
	exit 2
fi
repeat=${REPEAT:-3}
configs=${CONFIGS:-"100 300"}
modes=${MODES:-"plain tls"}
read -r -a tokens <<<"${TOKENS:-200}"
if [ ${#tokens[@]} -gt 2 ]; then
	echo "TOKENS: one or two token counts, not ${#tokens[@]}" >&2
	exit 2
fi
if [ ${#tokens[@]} -eq 2 ] && [ "${tokens[0]}" -ge "${tokens[1]}" ]; then
	echo "TOKENS: the smaller count first, then the larger (\"200 1000\"), not \"${tokens[*]}\"" >&2
	exit 2
fi
read -r -a client_args <<<"${CLIENT_ARGS:-}"
port=${BENCH_PORT:-20100}
limit=${TIMEOUT:-120}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bins="$1"
if [ "$2" != "$1" ]; then bins="$1 $2"; fi

# one BIN MODE C N: one run of N tokens a stream, one line
one() {
	local bin=$1 mode=$2 c=$3 n=$4 ctl=$((port + 1))
	local sargs=() cargs=() tgt=127.0.0.1:$port
	case $mode in tls* | h2 | h2go | h3) sargs=(--tls-self-signed) cargs=(--insecure) tgt=https://127.0.0.1:$port ;; esac
	case $mode in h2 | h2go) cargs+=(--http2) ;; h2c*) cargs+=(--h2c) ;; h3) sargs+=(--http3) cargs+=(--http3) ;; esac
	case $mode in
	*go) cargs+=(--engine goroutine) ;;
	h2cmux*) cargs+=(--engine goroutine -k --streams-per-conn "${mode#h2cmux}") ;;
	h2cloopmux*) cargs+=(--engine epoll -k --streams-per-conn "${mode#h2cloopmux}") ;;
	esac
	cargs+=("${client_args[@]}")
	/usr/bin/time -f "%U %S" -o "$tmp/stime" timeout "$limit" "$bin" -L 127.0.0.1:$port \
		--control 127.0.0.1:$ctl --control-token bench "${sargs[@]}" -q >"$tmp/srv" 2>&1 &
	local spid=$!
	for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$ctl) 2>/dev/null && break; sleep 0.05; done
	local load
	load=$(cut -d' ' -f1 /proc/loadavg)
	/usr/bin/time -f "%U %S" -o "$tmp/ctime" timeout "$limit" "$bin" -t "$tgt" --server http://127.0.0.1:$ctl \
		--control-token bench -l -r "$c" -c "$c" -n "$n" -q "${cargs[@]}" >"$tmp/cli" 2>&1 || true
	pkill -TERM -P "$spid" || true
	wait "$spid" 2>/dev/null || true
	local line cu cs su ss
	line=$(grep -m1 '^ *emit->recv (tokens)' "$tmp/cli" || echo "failed failed")
	read -r cu cs < <(tail -1 "$tmp/ctime")
	read -r su ss < <(tail -1 "$tmp/stime")
	# A failed run keeps its columns (p50 and p99 "failed"), so that its
	# -n stays the ninth field; the medians leave it out.
	echo "$(basename "$bin") $mode $c $(sed -E 's/.*p50=([0-9.]+)ms.*p99=([0-9.]+)ms.*/\1 \2/' <<<"$line") $(echo "$cu + $cs" | bc) $(echo "$su + $ss" | bc) $load $n"
	port=$((port + 2))
}

echo "| binary | path | -c | -n | emit->recv p50 ms | p99 ms | client CPU s | server CPU s | load |"
echo "|---|---|---|---|---|---|---|---|---|"
for _ in $(seq "$repeat"); do
	for c in $configs; do
		for m in $modes; do
			for n in "${tokens[@]}"; do
				for b in $bins; do
					one "$b" "$m" "$c" "$n" | tee -a "$tmp/rows" | awk '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$9,$4,$5,$6,$7,$8}'
				done
			done
		done
	done
done
echo
echo "Medians (CPU per token = (user+sys) / (c * n tokens)):"
echo "| binary | path | -c | -n | emit->recv p50 ms | p99 ms | client CPU us/token | server CPU us/token |"
echo "|---|---|---|---|---|---|---|---|"
sort -k2,2 -k3,3n -k1,1 -k9,9n "$tmp/rows" | awk -v marg="$tmp/marginal" '
function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function flush(  mc, ms) { if (!n) return
	mc = med(cc, n); ms = med(sc, n)
	printf "| %s | %s | %s | %s | %.2f | %.2f | %.1f | %.1f |\n", kb, km, kc, kn, med(p50, n), med(p99, n), mc / (kc * kn) * 1e6, ms / (kc * kn) * 1e6
	print kb, km, kc, kn, mc, ms >> marg; n = 0 }
$4 == "failed" { next }
{ k = $1 " " $2 " " $3 " " $9; if (k != key) { flush(); key = k; kb = $1; km = $2; kc = $3; kn = $9 }
  n++; p50[n] = $4; p99[n] = $5; cc[n] = $6; sc[n] = $7 }
END { flush() }'
if [ ${#tokens[@]} -eq 2 ]; then
	echo
	echo "Marginal CPU per token ((median CPU at -n ${tokens[1]} - at -n ${tokens[0]}) / (c * $((tokens[1] - tokens[0])) tokens)):"
	echo "| binary | path | -c | client CPU us/token | server CPU us/token |"
	echo "|---|---|---|---|---|"
	awk '{ k = $1 " " $2 " " $3 }
	k != key { key = k; n0 = $4; c0 = $5; s0 = $6; next }
	{ printf "| %s | %s | %s | %.1f | %.1f |\n", $1, $2, $3, ($5 - c0) / ($3 * ($4 - n0)) * 1e6, ($6 - s0) / ($3 * ($4 - n0)) * 1e6 }' "$tmp/marginal"
fi
