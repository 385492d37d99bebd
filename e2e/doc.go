// Package e2e holds the end-to-end tests of sse-latency against real
// gateways — haproxy, nginx and Caddy. Each test starts a gateway as a child
// process on a free loopback port, with the configuration users copy from
// examples/ (the conventional addresses 127.0.0.1:8080 and 127.0.0.1:8090
// replaced by free ports), runs a whole measurement through it with
// cli.Measure and stops it whatever happens.
//
// A missing gateway program skips its tests with the Debian package to
// install, except under CI=true, where it is a failure: CI installs them
// (.ci/run).
//
// TestGatewayReport, run by "make e2e-report", writes docs/gateways.md: it
// only runs when SSE_LATENCY_GATEWAY_REPORT names the output file.
//
// The non-test code of the package starts and stops gateway processes and
// renders their configurations; it imports nothing of sse-latency.
package e2e
