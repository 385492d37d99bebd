#!/usr/bin/env bash
# A CI gate on a gateway configuration change: measures the gateway with
# the configuration before and with the one after, each in interleaved
# rounds (loopback and gateway alternated, L G G L ...), then fails only
# when a figure grew beyond its threshold AND beyond the noise of the
# rounds (sse-latency compare --fail-if).
#
#   gate.sh BEFORE.conf AFTER.conf
#
# Exit status: 0 no regression; 3 a regression beyond noise (compare's);
# 1 a request failed or something could not run.
#
# Settings, from the environment (defaults in brackets):
#   SSE_LATENCY   the sse-latency binary [sse-latency]
#   GATEWAY       the gateway's command, the configuration file appended
#                 [haproxy -db -f]
#   LISTEN        where sse-latency's server listens, the gateway's backend [127.0.0.1:8090]
#   TARGET        where the gateway listens [127.0.0.1:8080]
#   ROUNDS        pairs of rounds per measurement [7]
#   LOAD          the load of each round, and other flags [-r 25 -c 5 -n 200 -d 5 -q]
#   FAIL_IF       the conditions, one per line
#                 [emit->recv p99 +20%  and  added TTFT p50 +0.5ms]
#   OUT           where the documents and pages go [.]
set -euo pipefail

before=${1:?usage: gate.sh BEFORE.conf AFTER.conf}
after=${2:?usage: gate.sh BEFORE.conf AFTER.conf}
sse=${SSE_LATENCY:-sse-latency}
gateway=${GATEWAY:-haproxy -db -f}
listen=${LISTEN:-127.0.0.1:8090}
target=${TARGET:-127.0.0.1:8080}
rounds=${ROUNDS:-7}
load=${LOAD:--r 25 -c 5 -n 200 -d 5 -q}
fail_if=${FAIL_IF:-$'emit->recv p99 +20%\nadded TTFT p50 +0.5ms'}
out=${OUT:-.}

gw_pid=
stop_gateway() {
	if [ -n "$gw_pid" ]; then
		kill "$gw_pid" 2>/dev/null || true
		wait "$gw_pid" 2>/dev/null || true
		gw_pid=
	fi
}
trap stop_gateway EXIT

# accepting HOST PORT: whether something accepts connections there.
accepting() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# measure CONF NAME: runs the gateway with CONF and measures it into
# $out/NAME.json and $out/NAME.html.
measure() {
	local host=${target%:*} port=${target##*:}
	if accepting "$host" "$port"; then
		echo "gate: $target is already in use: another process would be measured" >&2
		exit 1
	fi
	# shellcheck disable=SC2086 # GATEWAY is a command line
	$gateway "$1" >"$out/$2.gateway.log" 2>&1 &
	gw_pid=$!
	for _ in $(seq 100); do
		accepting "$host" "$port" && break
		kill -0 "$gw_pid" 2>/dev/null || { cat "$out/$2.gateway.log" >&2; echo "gate: the gateway exited" >&2; exit 1; }
		sleep 0.1
	done
	# shellcheck disable=SC2086 # LOAD is a list of flags
	"$sse" -L "$listen" -t "$target" --rounds "$rounds" $load \
		--json "$out/$2.json" --html "$out/$2.html"
	stop_gateway
}

echo "gate: measuring the gateway with $before" >&2
measure "$before" before
echo "gate: measuring the gateway with $after" >&2
measure "$after" after

args=()
while IFS= read -r cond; do
	[ -n "$cond" ] && args+=(--fail-if "$cond")
done <<<"$fail_if"
"$sse" compare "$out/before.json" "$out/after.json" "${args[@]}"
