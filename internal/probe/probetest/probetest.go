// Package probetest reads what `sse-latency probe` serves, for the tests
// of the packages that produce it (probe, cli): /metrics parsed with
// Prometheus's own text parser, and its samples found by name and labels.
package probetest

import (
	"fmt"
	"io"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse reads metric families in Prometheus's text format.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Find returns the sample of family name whose labels include labels
// ("name=value" pairs), nil when there is none.
func Find(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// Value is Find's sample as one number: a counter's or a gauge's value, a
// histogram's count; -1 when there is no such sample (a gauge may be
// negative itself: test its presence with Find).
func Value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := Find(fams, name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

// CheckStoppedAfter checks the stderr of a probe stopped during round n,
// whose gateway batch has requests requests: round n ran to its end with
// every request ok (none interrupted), the probe said it stopped after n
// rounds, and no round n+1 started.
func CheckStoppedAfter(t testing.TB, stderr string, n, requests int) {
	t.Helper()
	for _, want := range []string{
		fmt.Sprintf("probe: round %d: gateway %d/%d ok", n, requests, requests),
		fmt.Sprintf("probe: stopped after %d rounds", n),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if next := fmt.Sprintf("probe: round %d", n+1); strings.Contains(stderr, next) {
		t.Errorf("a round started after the stop:\n%s", stderr)
	}
}
