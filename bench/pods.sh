#!/usr/bin/env bash
# What one server pod and one client pod can carry (docs/scale-out.md): the
# server and the client as two processes, as across hosts — a server-only
# run with its control endpoints, a client-only run reading them (--server)
# — on loopback, -t the server itself (no gateway: the tool alone), at
# several concurrencies. Each process's CPU (user+system, /usr/bin/time -v)
# is divided by the tokens, so that a pod's CPU request gives the tokens per
# second it carries; the server's emission lateness p99 (its account when it
# stops) says whether it kept to its schedule, the client's emit->recv p99
# whether it read in time.
#
#   bench/pods.sh                 # -c 100 300 500 1000, REPEAT (default 3) runs each
#   bench/pods.sh 200 400         # only these -c values
#   DELAY=5 TOKENS=200 bench/pods.sh
#
# Columns (one row per run): -c; server CPU us/token; server emission
# lateness p50/p99 ms; client CPU us/token; client emit->recv p50/p99 ms;
# ok/requests; the 1-minute load average when the run started (figures from
# a busy machine are noise). Every run is bounded (timeout); traffic stays
# on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
go build -o "$out/sse-latency" ./cmd/sse-latency
bin="$out/sse-latency"
port=${BENCH_PORT:-18190}
ctl=$((port + 1))
tokens=${TOKENS:-200}
delay=${DELAY:-5}
repeat=${REPEAT:-3}
token=bench-pods-token

run() {
	local c=$1 load
	load=$(cut -d' ' -f1 /proc/loadavg)
	/usr/bin/time -v -o "$out/pods-server.time" "$bin" -L "127.0.0.1:$port" --control "127.0.0.1:$ctl" \
		--control-token "$token" --instance-id bench-server >"$out/pods-server.log" 2>&1 &
	local srv=$!
	for _ in $(seq 100); do
		grep -q "control endpoints" "$out/pods-server.log" 2>/dev/null && break
		sleep 0.1
	done
	/usr/bin/time -v -o "$out/pods-client.time" timeout 300 "$bin" -t "127.0.0.1:$port" --server "http://127.0.0.1:$ctl" \
		--control-token "$token" -c "$c" -r "$c" -n "$tokens" -d "$delay" -q --json "$out/pods-client.json" \
		>"$out/pods-client.log" 2>&1 || true
	# /usr/bin/time ignores SIGINT while it waits: the server is its child
	# (gone already if it could not start: its log says why).
	local child
	child=$(pgrep -P "$srv" || true)
	[ -z "$child" ] || kill -INT "$child"
	wait "$srv" || true
	local scpu ccpu
	scpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$out/pods-server.time")
	ccpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$out/pods-client.time")
	local late50 late99
	read -r late50 late99 < <(sed -n 's/^server: .*lateness p50=\([0-9.]*\)ms p99=\([0-9.]*\)ms.*/\1 \2/p' "$out/pods-server.log")
	jq -r --arg c "$c" --arg scpu "$scpu" --arg ccpu "$ccpu" --arg l50 "${late50:-?}" --arg l99 "${late99:-?}" --arg load "$load" '
		.batches[] | select(.name == "gateway") |
		(.stream.by_pi_ts + .stream.by_content + .stream.unmeasured) as $tok |
		"| \($c) | \(if $tok > 0 then ($scpu | tonumber) / $tok * 1e6 | floor else "?" end) | \($l50) / \($l99) | " +
		"\(if $tok > 0 then ($ccpu | tonumber) / $tok * 1e6 | floor else "?" end) | " +
		"\(.metrics.emit_recv.p50_ms * 1000 | round / 1000) / \(.metrics.emit_recv.p99_ms * 1000 | round / 1000) | \(.ok)/\(.requests) | \($load) |"
	' "$out/pods-client.json"
}

echo "| -c | server CPU us/token | server lateness p50 / p99 ms | client CPU us/token | client emit->recv p50 / p99 ms | ok/requests | load |"
echo "|---|---|---|---|---|---|---|"
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(100 300 500 1000)
for c in "${configs[@]}"; do
	for _ in $(seq "$repeat"); do run "$c"; done
done
