package batch

import (
	"reflect"
	"testing"
)

func TestCalibrationFor(t *testing.T) {
	tests := []struct {
		requests, concurrency, tokens int
		want                          Calibration
	}{
		{1, 1, 1000, Calibration{1, 1, 200}},     // -r 1: one request
		{20, 5, 1000, Calibration{5, 5, 200}},    // c requests, at most 200 tokens
		{20, 1, 50, Calibration{3, 1, 50}},       // at least 3, one at a time
		{2, 1, 0, Calibration{2, 1, 0}},          // no more than -r
		{0, 0, 300, Calibration{3, 0, 200}},      // --duration, open loop without cap
		{0, 500, 10, Calibration{500, 500, 10}},  // --duration at -c 500
		{100, 40, 200, Calibration{40, 40, 200}}, // exactly 200 tokens
	}
	for _, tt := range tests {
		if got := CalibrationFor(tt.requests, tt.concurrency, tt.tokens); got != tt.want {
			t.Errorf("CalibrationFor(%d, %d, %d) = %+v, want %+v", tt.requests, tt.concurrency, tt.tokens, got, tt.want)
		}
	}
}

func TestWithWarmup(t *testing.T) {
	tests := []struct {
		spec   Spec
		warmup int
		want   Spec
	}{
		{Spec{Requests: 20, Concurrency: 5}, 3, Spec{Requests: 23, Concurrency: 5, Warmup: 3}},
		{Spec{Requests: 20, Concurrency: 5}, 0, Spec{Requests: 20, Concurrency: 5}},
		{Spec{Duration: 1e9, Rate: 10}, 4, Spec{Duration: 1e9, Rate: 10, Warmup: 4}}, // no count to add to
	}
	for _, tt := range tests {
		if got := tt.spec.WithWarmup(tt.warmup); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v.WithWarmup(%d) = %+v, want %+v", tt.spec, tt.warmup, got, tt.want)
		}
	}
}
