module github.com/sse-latency/sse-latency

go 1.26.8

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/spf13/pflag v1.1.0
	golang.org/x/sys v0.50.0
)
