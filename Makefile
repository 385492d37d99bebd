# Shortcuts for the commands of README.md and docs/. Each target is one
# command that can also be run by hand.

.PHONY: build test e2e-report bench image image-test

# The release binary ./sse-latency: static and stripped (image/build.sh
# binary, as in the image). Against a plain `go build`, -c 1 -n 1 runs
# take ~1.4 MB less resident memory and ~2 ms less CPU (docs/PERF.md).
build:
	image/build.sh binary sse-latency

# The README's test command (what CI runs after gofmt, go vet and staticcheck).
test:
	go test -race -timeout 15m ./...

# Regenerates docs/gateways.md: every configuration of examples/ measured
# through the real gateway (haproxy, nginx, caddy, lighttpd and apache2
# must be installed).
# Run it on an otherwise idle machine.
e2e-report:
	SSE_LATENCY_GATEWAY_REPORT=$(CURDIR)/docs/gateways.md go test -run TestGatewayReport -count=1 -timeout 20m -v ./e2e/

# Whole-tool figures of docs/PERF.md.
bench:
	bench/run.sh

# The image (docs/scale-out.md): the static binary, then an OCI image FROM
# scratch with podman, buildah or docker (BUILDER=...), no registry needed.
IMAGE ?= sse-latency:latest
image:
	image/build.sh image $(IMAGE)

# The image test alone (it is in `make test` too): builds the image from the
# binary the tests build, inspects it, runs a measurement in it.
image-test:
	go test -run TestImage -count=1 -v ./cmd/sse-latency/
