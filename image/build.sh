#!/bin/sh
# Builds sse-latency's image without a registry: the static binary with the
# Go toolchain, then an OCI image FROM scratch (image/Dockerfile) with
# podman, buildah or docker.
#
#   image/build.sh binary OUT          the binary only (what the tests of cmd/sse-latency run)
#   image/build.sh image TAG [BINARY]  the image TAG, of BINARY when given, else of a binary built now
#
# BUILDER picks the image builder (podman, buildah or docker; default: the
# first installed). The commit is stamped into the binary (--version shows
# it) and the image's org.opencontainers.image.revision label.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit="$commit-dirty"
fi

binary() {
	(cd "$root" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X github.com/sse-latency/sse-latency/internal/cli.commit=$commit" \
		-o "$1" ./cmd/sse-latency)
}

case "${1:-}" in
binary)
	[ $# -eq 2 ] || { echo "usage: $0 binary OUT" >&2; exit 2; }
	binary "$2"
	;;
image)
	[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: $0 image TAG [BINARY]" >&2; exit 2; }
	tag=$2
	builder=${BUILDER:-}
	if [ -z "$builder" ]; then
		for b in podman buildah docker; do
			if command -v "$b" >/dev/null; then builder=$b; break; fi
		done
	fi
	[ -n "$builder" ] || { echo "$0: no image builder: install podman or buildah (or set BUILDER)" >&2; exit 1; }
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"' EXIT
	if [ $# -eq 3 ]; then
		cp "$3" "$ctx/sse-latency"
	else
		binary "$ctx/sse-latency"
	fi
	cp "$root/image/Dockerfile" "$ctx/Dockerfile"
	case "$(basename "$builder")" in
	podman | buildah)
		# Nothing to pull (FROM scratch), and no network while building.
		"$builder" build --pull=never --network=none --build-arg "COMMIT=$commit" -t "$tag" -f "$ctx/Dockerfile" "$ctx"
		;;
	*)
		"$builder" build --build-arg "COMMIT=$commit" -t "$tag" -f "$ctx/Dockerfile" "$ctx"
		;;
	esac
	;;
*)
	echo "usage: $0 binary OUT | image TAG [BINARY]" >&2
	exit 2
	;;
esac
