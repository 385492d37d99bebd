package batch

// CalibrationMaxTokens caps the tokens of each calibration request (SPEC §5:
// min(n, 200)), and its reasoning and tool-call tokens.
const CalibrationMaxTokens = 200

// CalibrationMinRequests is the fewest calibration requests a batch asks for
// when the gateway batch allows it (SPEC §5: min(max(c, 3), r)).
const CalibrationMinRequests = 3

// Calibration is the size of the loopback calibration batch that measures
// the tool's own noise floor before a gateway batch of requests requests
// (0: no count, a batch limited by its duration) at concurrency concurrency
// of tokens tokens each (SPEC §5): min(max(c, 3), r) requests of
// min(n, 200) tokens, at most c of them at once.
type Calibration struct {
	Requests, Concurrency, Tokens int
}

// CalibrationFor returns the calibration batch for a gateway batch of
// requests requests at concurrency concurrency, tokens tokens each.
func CalibrationFor(requests, concurrency, tokens int) Calibration {
	k := max(concurrency, CalibrationMinRequests)
	if requests > 0 {
		k = min(k, requests)
	}
	return Calibration{Requests: k, Concurrency: min(concurrency, k), Tokens: min(tokens, CalibrationMaxTokens)}
}

// WithWarmup returns s with its first n requests run as warm-up (Warmup):
// reported, left out of the statistics, and added to Requests when s counts
// them, so that Requests measured requests still follow (-r counts the
// measured requests, --warmup those before).
func (s Spec) WithWarmup(n int) Spec {
	s.Warmup = n
	if s.Requests > 0 {
		s.Requests += n
	}
	return s
}
