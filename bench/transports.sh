#!/bin/sh
# The transport matrix's noise floor (docs/guide/transports-and-load.md#http3):
# one process, -t = -L on loopback, -c 100 -r 100 -n 200, each cell REPS
# times, the cells interleaved (h1, h1 TLS, h2 TLS, h2c, h3, h1, ...) so a
# busy machine weighs on all of them alike. Prints per run the gateway
# batch's emit->recv p50/p99 and the process's CPU per token
# ((user+sys)/tokens, client and server together: one process), then the
# medians per cell.
#
#   bench/transports.sh [binary] [reps] [port]
set -eu
bin=${1:-./sse-latency}
reps=${2:-3}
port=${3:-19100}
tokens=20000 # -r 100 x -n 200
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cells="h1 h1tls h2tls h2c h3"
args() {
	a="127.0.0.1:$port"
	case $1 in
	h1) echo "-L $a -t http://$a" ;;
	h1tls) echo "-L $a --tls-self-signed --insecure -t https://$a" ;;
	h2tls) echo "-L $a --tls-self-signed --insecure --http2 -t https://$a" ;;
	h2c) echo "-L $a --h2c -t http://$a" ;;
	h3) echo "-L $a --tls-self-signed --insecure --http3 -t https://$a" ;;
	esac
}
for rep in $(seq "$reps"); do
	for c in $cells; do
		# shellcheck disable=SC2046
		/usr/bin/time -f '%U %S' -o "$tmp/time" "$bin" $(args $c) -c 100 -r 100 -n 200 >"$tmp/out" 2>"$tmp/err" || true
		line=$(grep '^emit->recv (tokens)' "$tmp/out" | head -1)
		p50=$(echo "$line" | sed -n 's/.*p50=\([0-9.]*\)ms.*/\1/p')
		p99=$(echo "$line" | sed -n 's/.*p99=\([0-9.]*\)ms.*/\1/p')
		cpu=$(awk -v n=$tokens '{printf "%.1f", ($1+$2)/n*1e6}' "$tmp/time")
		ok=$(grep -o '[0-9]* ok, [0-9]* failed' "$tmp/out" | head -1)
		echo "$rep $c p50=$p50 p99=$p99 cpu_us_per_token=$cpu ($ok)"
		echo "$c $p50 $p99 $cpu" >>"$tmp/all"
	done
done
echo "median of $reps: cell emit->recv-p50-ms p99-ms cpu-us/token"
for c in $cells; do
	med() { grep "^$c " "$tmp/all" | awk -v f="$1" '{print $f}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	echo "$c $(med 2) $(med 3) $(med 4)"
done
