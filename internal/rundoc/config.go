package rundoc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Config is the measurement's configuration as a document records it: the
// command line after its defaults and clamps (package cli embeds it in its
// own Config, beside the output paths, which are not recorded), secrets
// redacted. Units are in the field comments.
//
// The merge tag of each field is its Rule: what merge does when parallel
// runs differ in it. Every field has one (a test checks it).
type Config struct {
	Listen      string  `json:"listen" merge:"instance"`      // -L: listen address of the dummy server
	Target      string  `json:"target" merge:"gateway"`       // -t: gateway address; empty = server only
	Requests    int     `json:"requests" merge:"sum"`         // -r: number of gateway requests (>= 1; 0 with --duration: no limit)
	Concurrency int     `json:"concurrency" merge:"sum"`      // -c: requests in flight (1..Requests; open loop: a cap, 0 = none)
	Tokens      int     `json:"tokens" merge:"same"`          // -n: tokens per response (>= 0)
	ThinkMs     float64 `json:"think_ms" merge:"same"`        // -T: delay before the first token, ms (>= 0)
	DelayMs     float64 `json:"delay_ms" merge:"same"`        // -d: delay between tokens, ms (>= 0)
	TimeoutMs   int     `json:"timeout_ms" merge:"same"`      // -w: per-request timeout, ms (>= 1)
	IdleMs      int     `json:"idle_timeout_ms" merge:"same"` // --idle-timeout: end a request silent for this long, ms (0 = off)
	NoLoopback  bool    `json:"no_loopback" merge:"same"`     // -l: skip the loopback calibration batch
	Quiet       bool    `json:"quiet" merge:"console"`        // -q: no per-request lines
	Verbose     bool    `json:"verbose" merge:"console"`      // -v: debug lines on stderr
	Compat      bool    `json:"compat" merge:"console"`       // --compat: print only what the reference prints (no verdict block)
	Compressed  bool    `json:"compressed" merge:"same"`      // --compressed: ask for gzip (Accept-Encoding: gzip); gzip bodies are always decoded

	API          string `json:"api" merge:"same"`           // --api: chat, completions, responses or anthropic
	Corpus       string `json:"corpus" merge:"same"`        // --corpus: the preset stream shape that set --api, -n, --reasoning, --tool-call and the write shape ("" = none)
	Model        string `json:"model" merge:"same"`         // --model: model name the requests ask for
	Path         string `json:"path" merge:"instance"`      // --path: request path through the gateway; "" = the dialect's
	IncludeUsage bool   `json:"include_usage" merge:"same"` // --include-usage: ask chat/completions streams for usage and check it

	// Phases before the text (not in --api completions).
	Reasoning      int    `json:"reasoning" merge:"same"`       // --reasoning: reasoning tokens per response, spread over -T (>= 0)
	ToolCall       int    `json:"tool_call" merge:"same"`       // --tool-call: argument tokens of a tool call before the text (>= 0)
	ReasoningField string `json:"reasoning_field" merge:"same"` // --reasoning-field: reasoning_content or reasoning (the Chat field; Responses summary or reasoning text)
	// Heartbeats (every dialect).
	HeartbeatMs float64 `json:"heartbeat_ms" merge:"same"` // --heartbeat: the server writes a heartbeat after this many ms of silence (0 = none)

	// Transports and headers.
	KeepAlive      bool     `json:"keepalive" merge:"same"`        // -k: reuse a connection per concurrency slot
	ServerClose    bool     `json:"server_close" merge:"same"`     // --server-close: the server closes after every response, as the reference
	MaxStreams     int      `json:"max_streams" merge:"same"`      // --max-streams: the server answers 429 beyond this many concurrent streams (0 = its default, -1 = no limit)
	Insecure       bool     `json:"insecure" merge:"same"`         // --insecure: do not verify the gateway's certificate
	CACert         string   `json:"cacert" merge:"instance"`       // --cacert: PEM file of CAs to trust for https targets (a path on each machine)
	HTTP2          bool     `json:"http2" merge:"same"`            // --http2: offer h2 to https targets (ALPN)
	H2C            bool     `json:"h2c" merge:"same"`              // --h2c: speak h2c with prior knowledge to http targets
	StreamsPerConn int      `json:"streams_per_conn" merge:"same"` // --streams-per-conn: concurrency slots per shared HTTP/2 connection, each request a stream of its own on it (1 = a connection per slot)
	HTTP3          bool     `json:"http3" merge:"same"`            // --http3: speak HTTP/3 (QUIC) to https targets
	WebSocket      bool     `json:"websocket" merge:"same"`        // --websocket: the Responses API's WebSocket mode to the gateway (and the calibration)
	TLSCert        string   `json:"tls_cert" merge:"instance"`     // --tls-cert: the server's certificate (PEM; a path on each machine)
	TLSKey         string   `json:"tls_key" merge:"instance"`      // --tls-key: its key
	TLSSelfSigned  bool     `json:"tls_self_signed" merge:"same"`  // --tls-self-signed: the server listens with TLS, in-memory certificate
	Headers        []string `json:"headers" merge:"same"`          // -H: extra request headers ("Name: value"); secrets redacted
	APIKey         string   `json:"api_key" merge:"same"`          // --api-key: Authorization: Bearer (x-api-key for anthropic); redacted
	HostHeader     string   `json:"host_header" merge:"gateway"`   // --host-header: Host header to send
	Gateway        string   `json:"gateway" merge:"gateway"`       // --gateway: the gateway as the user named it (package gateway's names); "" = named from what it shows
	Engine         string   `json:"engine" merge:"instance"`       // --engine: how this instance did its I/O, auto, epoll or goroutine (not what it measured)
	Faults         string   `json:"faults" merge:"same"`           // --fault: upstream faults the server injects into every answer (api.Faults, "key=value; …"); "" = none

	// Across hosts.
	Control  string `json:"control" merge:"instance"`  // --control: listen address of the server's control endpoints (its timing records); "" = none
	Instance string `json:"instance" merge:"instance"` // --instance-id: the id of the server here, in its events and heads and on its control endpoints (with --control; "" = none)
	Server   string `json:"server" merge:"instance"`   // --server: the control endpoints (URLs, comma-separated: one per server replica, or a name resolving to each) of the servers on other hosts; "" = the server runs in this process

	// The host's CPUs.
	GatewayPIDs []int  `json:"gateway_pids" merge:"instance"` // --gateway-pid: the gateway's processes whose CPU is accounted, children included (none: the one that owns the target's listening socket, when on this host)
	CPUs        string `json:"cpus" merge:"instance"`         // --cpus: the CPUs the tool's threads were pinned to ("0,2-3"; "" = not pinned)

	// Load shape.
	Rate     float64       `json:"rate" merge:"sum"`         // --rate: requests per second (open loop); 0 = closed loop
	Arrival  string        `json:"arrival" merge:"same"`     // --arrival: constant or poisson
	Duration time.Duration `json:"duration_ns" merge:"same"` // --duration: start requests for this long instead of -r
	Warmup   int           `json:"warmup" merge:"sum"`       // --warmup: first N requests excluded from the statistics

	// Interleaving, request size and gates.
	Rounds      int      `json:"rounds" merge:"same"`       // --rounds: loopback/gateway pairs of rounds, alternated (0 = the reference's single calibration)
	PromptBytes int      `json:"prompt_bytes" merge:"same"` // --prompt-bytes: the prompt padded to this many bytes (0 = the reference's short prompt)
	SLOs        []string `json:"slos" merge:"console"`      // --slo: service-level objectives checked after the run, as package slo writes them

	// Production-shaped traffic: length distributions, trace replay, the
	// server's simulated prefix cache.
	TokensDist      string  `json:"tokens_dist" merge:"same"`        // -n as a distribution (package lengths: "uniform:50-500"); "" = the fixed -n
	PromptBytesDist string  `json:"prompt_bytes_dist" merge:"same"`  // --prompt-bytes as a distribution ("lognormal:4k,1"); "" = the fixed --prompt-bytes
	Seed            uint64  `json:"seed" merge:"instance"`           // --seed: the draws of the distributions and the Poisson arrivals (one seed, one run)
	Trace           string  `json:"trace" merge:"instance"`          // --trace: the trace file replayed (Mooncake JSONL or BurstGPT CSV; a path on each machine); "" = none
	TraceSpeed      float64 `json:"trace_speed" merge:"same"`        // --trace-speed: the replay's speed (2: twice as fast)
	TraceLimit      int     `json:"trace_limit" merge:"same"`        // --trace-limit: replay at most this many of the trace's requests (0 = all)
	TraceSkipBad    bool    `json:"trace_skip_bad" merge:"same"`     // --trace-skip-bad: skip the trace's bad lines, counted, instead of failing
	CacheBlock      int     `json:"cache_block_tokens" merge:"same"` // --cache-block: the server's simulated prefix cache block, tokens (0 = none: the usage's cache fields null); a trace's hash block size
}

// MissingSettings are the values a document that lacks a setting is read
// with: each setting's default, for the settings added after
// schema_version 1 began (a run made before one existed had it so). With
// them, documents of before and after a setting compare equal when it was
// not used. cli.DefaultConfig agrees (a test checks it).
var MissingSettings = Config{Arrival: "constant", ReasoningField: "reasoning_content", Engine: "auto", Seed: 1, TraceSpeed: 1, CacheBlock: 512,
	StreamsPerConn: 1}

// Rule is what merge (and compare) does with a configuration field in
// which the runs differ.
type Rule string

// The rules, as the merge tags of Config name them.
const (
	// RuleSame: the field describes the measurement (the gateway, the
	// stream, the transport); runs that differ in it measured different
	// things and are refused, unless forced.
	RuleSame Rule = "same"
	// RuleGateway: the field names the gateway under test (the target,
	// the Host header): merge refuses runs of different gateways like
	// RuleSame, while compare expects before and after to differ in it
	// and does not warn.
	RuleGateway Rule = "gateway"
	// RuleInstance: the field is each instance's own (its listen address,
	// its path prefix through the gateway, files on its machine); it may
	// differ. The merged document keeps the first run's value and a note
	// says how many there were.
	RuleInstance Rule = "instance"
	// RuleSum: the field is the load an instance generated (requests,
	// concurrency, rate, warm-up); it may differ in amount, and the merged
	// document holds the sum, the load of all the runs together. Zero
	// beside non-zero is a different kind of run (no request limit, no
	// concurrency cap, closed loop, no warm-up) and refused like RuleSame.
	RuleSum Rule = "sum"
	// RuleConsole: the field only changed what the run printed or
	// checked (-q, -v, --compat, --slo), not what it measured; it is
	// ignored, the first run's kept.
	RuleConsole Rule = "console"
)

// configField is one field of Config with its rule.
type configField struct {
	name  string // its JSON key
	rule  Rule
	index int
}

// configFields lists the fields of Config and their rules, from the type.
// A field without a valid merge tag is a programming error that the
// package's tests catch: it panics.
var configFields = sync.OnceValue(func() []configField {
	t := reflect.TypeFor[Config]()
	out := make([]configField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		rule := Rule(f.Tag.Get("merge"))
		switch rule {
		case RuleSame, RuleGateway, RuleInstance, RuleSum, RuleConsole:
		default:
			panic(fmt.Sprintf("rundoc.Config.%s: merge tag %q is not a rule", f.Name, rule))
		}
		out[i] = configField{name: jsonName(f), rule: rule, index: i}
	}
	return out
})

// jsonName is the JSON key of struct field f.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// configDiff is one field in which two configurations differ.
type configDiff struct {
	field configField
	a, b  string // the values, as compact JSON
}

func (d configDiff) String() string { return fmt.Sprintf("%s (%s vs %s)", d.field.name, d.a, d.b) }

// joinDiffs lists diffs as "tokens (1000 vs 200), delay_ms (5 vs 1)".
func joinDiffs(diffs []configDiff) string {
	s := make([]string, len(diffs))
	for i, d := range diffs {
		s[i] = d.String()
	}
	return strings.Join(s, ", ")
}

// mergeDiffs returns the fields in which runs a and b may not differ to be
// merged: those of RuleSame and RuleGateway, and those of RuleSum that are
// zero in one and not in the other.
func mergeDiffs(a, b *Config) []configDiff {
	return diffConfigs(a, b, func(r Rule, za, zb bool) bool {
		switch r {
		case RuleSame, RuleGateway:
			return true
		case RuleSum:
			return za != zb
		}
		return false
	})
}

// compareDiffs returns the fields in which a run before and a run after
// differ so that their figures may not be comparable: those of RuleSame
// and of RuleSum (more load is another measurement).
func compareDiffs(a, b *Config) []configDiff {
	return diffConfigs(a, b, func(r Rule, _, _ bool) bool { return r == RuleSame || r == RuleSum })
}

// diffConfigs returns the fields, in the order of Config, whose values in
// a and b differ and for which counts(rule, a's is zero, b's is zero) says
// the difference counts.
func diffConfigs(a, b *Config, counts func(r Rule, za, zb bool) bool) []configDiff {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var out []configDiff
	for _, f := range configFields() {
		fa, fb := va.Field(f.index), vb.Field(f.index)
		if ja, jb := jsonValue(fa), jsonValue(fb); ja != jb && counts(f.rule, fa.IsZero(), fb.IsZero()) {
			out = append(out, configDiff{f, ja, jb})
		}
	}
	return out
}

// jsonValue is v as compact JSON, the form the messages print.
func jsonValue(v reflect.Value) string {
	js, err := json.Marshal(v.Interface())
	if err != nil { // a NaN or ±Inf float, which the command line refuses
		return fmt.Sprint(v.Interface())
	}
	return string(js)
}

// instanceValues returns, for each RuleInstance field in which the
// configurations differ, its name and its number of distinct values.
func instanceValues(cfgs []*Config) []string {
	var out []string
	for _, f := range configFields() {
		if f.rule != RuleInstance {
			continue
		}
		seen := make(map[string]bool)
		for _, c := range cfgs {
			seen[jsonValue(reflect.ValueOf(c).Elem().Field(f.index))] = true
		}
		if len(seen) > 1 {
			out = append(out, fmt.Sprintf("%s (%d values)", f.name, len(seen)))
		}
	}
	return out
}

// addLoad adds the RuleSum fields of o to c.
func (c *Config) addLoad(o *Config) {
	vc, vo := reflect.ValueOf(c).Elem(), reflect.ValueOf(o).Elem()
	for _, f := range configFields() {
		if f.rule != RuleSum {
			continue
		}
		dst, src := vc.Field(f.index), vo.Field(f.index)
		switch dst.Kind() {
		case reflect.Int, reflect.Int64:
			dst.SetInt(dst.Int() + src.Int())
		case reflect.Float64:
			dst.SetFloat(dst.Float() + src.Float())
		default:
			panic(fmt.Sprintf("rundoc.Config: merge:\"sum\" on field %s of kind %s", f.name, dst.Kind()))
		}
	}
}
