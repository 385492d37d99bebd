package client

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
)

// maxUsagePayload bounds the event payload kept for a usage comparison:
// an event larger than this (a Responses completion that repeats a long
// answer) keeps only its usage object, found at once.
const maxUsagePayload = 4 << 10

// keepUsage records, once per usage-bearing event (never per token), the
// usage object of part p that arrived in payload, for the comparison at
// the end of the request.
func (r *reader) keepUsage(p api.UsagePart, payload []byte) {
	if r.rec.Usage == nil {
		r.rec.Usage = &result.Usage{}
	}
	u := r.rec.Usage
	if len(u.Received) >= int(api.NumUsageParts) {
		return // a gateway repeating usage events: the first ones count
	}
	obj := payload
	if len(obj) > maxUsagePayload {
		obj = usageObject(p, payload)
	}
	u.Received = append(u.Received, result.UsageObject{Part: p.String(), Payload: bytes.Clone(obj)})
}

// usageObject returns the usage object of part p in an event's payload
// (the payload itself may be given), nil when it holds none: Chat's and
// Anthropic's message_delta at "usage", Responses' at "response.usage",
// message_start's at "message.usage".
func usageObject(p api.UsagePart, payload []byte) json.RawMessage {
	var path []string
	switch p {
	case api.UsageCompleted:
		path = []string{"response", "usage"}
	case api.UsageStart:
		path = []string{"message", "usage"}
	default:
		path = []string{"usage"}
	}
	raw := json.RawMessage(payload)
	for _, k := range path {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		if raw = m[k]; raw == nil {
			return nil
		}
	}
	return raw
}

// CompareUsage compares the usage objects rec received with those the
// server reported (u, in dialect d; includeUsage: a Chat or Completions
// request that asked for its usage chunk), and records what differed in
// rec.Usage.Findings. It does nothing for a record that received no usage
// where none was to come. A usage object the server sent that did not
// arrive at all is a drop of the whole object (Field "").
func CompareUsage(rec *result.Request, d api.Dialect, includeUsage bool, u api.TokenUsage) {
	if (d == api.Chat || d == api.Completions) && !includeUsage {
		return // no usage chunk was asked for
	}
	if rec.Usage == nil {
		if !rec.OK() {
			return // a stream that failed before its end: its failure says it
		}
		rec.Usage = &result.Usage{}
	}
	rec.Usage.Compared = true
	rec.Usage.Findings = rec.Usage.Findings[:0]
	for _, p := range api.UsageParts(d) {
		i := slices.IndexFunc(rec.Usage.Received, func(o result.UsageObject) bool { return o.Part == p.String() })
		if i < 0 {
			if rec.OK() {
				rec.Usage.Findings = append(rec.Usage.Findings, result.UsageFinding{Kind: result.UsageDropped, Part: p.String()})
			}
			continue
		}
		got := flattenJSON(usageObject(p, rec.Usage.Received[i].Payload))
		sent := flattenJSON(api.AppendUsage(nil, d, p, u))
		rec.Usage.Findings = append(rec.Usage.Findings, diffUsage(p.String(), sent, got)...)
	}
}

// diffUsage lists the fields of the usage object part in which got (what
// arrived) differs from sent (what the server sent), in sent's order.
// Fields the gateway added are not findings (gateways add cost and the
// like). A field sent null counts as intact when absent (no figure either
// way) and zeroed when 0 arrived; a field sent with a value is dropped
// when absent or null, else changed — recomputed when the gateway's
// figures agree among themselves (its total is the sum of its parts).
func diffUsage(part string, sent, got flatUsage) []result.UsageFinding {
	var out []result.UsageFinding
	consistent := got.consistent()
	for _, f := range sent {
		g, ok := got.get(f.path)
		switch {
		case g == f.value:
			continue
		case f.value == "null" && !ok:
			continue
		case f.value == "null" && g == "0":
			out = append(out, result.UsageFinding{Kind: result.UsageZeroed, Part: part, Field: f.path, Sent: f.value, Got: g})
		case !ok || g == "null":
			out = append(out, result.UsageFinding{Kind: result.UsageDropped, Part: part, Field: f.path, Sent: f.value, Got: g})
		case consistent && isCount(f.path):
			out = append(out, result.UsageFinding{Kind: result.UsageRecomputed, Part: part, Field: f.path, Sent: f.value, Got: g})
		default:
			out = append(out, result.UsageFinding{Kind: result.UsageChanged, Part: part, Field: f.path, Sent: f.value, Got: g})
		}
	}
	return out
}

// isCount reports whether a usage field is one of the counts a gateway
// recomputes with its own tokenizer: the prompt, output and total tokens.
func isCount(path string) bool {
	switch path {
	case "prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens":
		return true
	}
	return false
}

// flatUsage is a usage object flattened: each leaf's dotted path and its
// value as compact JSON, in the object's order.
type flatUsage []flatField

type flatField struct{ path, value string }

func (f flatUsage) get(path string) (string, bool) {
	for _, x := range f {
		if x.path == path {
			return x.value, true
		}
	}
	return "", false
}

// consistent reports whether the object's total equals the sum of its
// prompt and output counts (OpenAI's and Responses' shapes; Anthropic's
// has no total).
func (f flatUsage) consistent() bool {
	for _, k := range [...][3]string{{"prompt_tokens", "completion_tokens", "total_tokens"}, {"input_tokens", "output_tokens", "total_tokens"}} {
		a, okA := f.get(k[0])
		b, okB := f.get(k[1])
		t, okT := f.get(k[2])
		if okA && okB && okT {
			var x, y, z json.Number = json.Number(a), json.Number(b), json.Number(t)
			xi, e1 := x.Int64()
			yi, e2 := y.Int64()
			zi, e3 := z.Int64()
			return e1 == nil && e2 == nil && e3 == nil && xi+yi == zi
		}
	}
	return false
}

// maxUsageFields bounds the leaves flattenJSON keeps of a usage object
// (a hostile gateway's could be large).
const maxUsageFields = 64

// flattenJSON flattens a JSON object into its leaves; a value that is no
// object flattens to nothing.
func flattenJSON(raw []byte) flatUsage {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var out flatUsage
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if len(out) >= maxUsageFields {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			// The server's own order is kept by sorting both sides alike.
			slices.Sort(keys)
			for _, k := range keys {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x[k])
			}
		default:
			b, _ := json.Marshal(x)
			out = append(out, flatField{prefix, strings.TrimSpace(string(b))})
		}
	}
	var v map[string]any
	if d.Decode(&v) != nil {
		return nil
	}
	walk("", v)
	return out
}
