package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// tokensPerRequest reads a --csv file: the tokens each request of batch
// received, by request index.
func tokensPerRequest(t *testing.T, path, batch string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) < 2 || f[0] != batch {
			continue
		}
		i, _ := strconv.Atoi(f[1])
		for len(out) <= i {
			out = append(out, 0)
		}
		out[i]++
	}
	return out
}

// readDoc reads a --json document, which must validate against the
// shipped JSON Schema (its replay, sizes and usage objects among the rest).
func readDoc(t *testing.T, path string) *rundoc.Document {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "sse-latency.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err == nil {
		err = sch.Validate(inst)
	}
	if err != nil {
		t.Fatalf("%s does not validate against the schema: %v", path, err)
	}
	var d rundoc.Document
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func tempFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A trace of five requests, the third out of order; the fourth shares the
// first's prefix blocks.
const testTrace = `{"timestamp": 0, "input_length": 1024, "output_length": 12, "hash_ids": [0, 1]}
{"timestamp": 40, "input_length": 300, "output_length": 3, "hash_ids": [2]}
{"timestamp": 20, "input_length": 2048, "output_length": 30, "hash_ids": [3, 4, 5, 6]}
{"timestamp": 60, "input_length": 1536, "output_length": 7, "hash_ids": [0, 1, 7]}
{"timestamp": 80, "input_length": 64, "output_length": 1}
`

// TestTraceReplayRun replays a trace through an in-process gateway: the
// requests arrive in timestamp order with the trace's output lengths (the
// tokens each received, by request), the report says the timestamps were
// sorted and how far the replay fell behind, and the document records the
// replay, the breakdown by size and the usage, intact.
func TestTraceReplayRun(t *testing.T) {
	backendLn := testutil.Listen(t)
	backend := backendLn.Addr().String()
	g := testutil.StartGateway(t, testutil.GatewayOptions{})
	g.SetUpstream(backend)
	dir := t.TempDir()
	js, csv := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.csv")
	code, out, errOut := runOn(t, nil, backendLn, "-L", backend, "-t", g.Addr, "--trace", tempFile(t, "t.jsonl", testTrace),
		"--trace-speed", "4", "-d", "1", "--include-usage", "--json", js, "--csv", csv, "-q")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if got, want := tokensPerRequest(t, csv, "gw"), []int{12, 30, 3, 7, 1}; !slices.Equal(got, want) {
		t.Errorf("tokens per gateway request %v, want the trace's output lengths in timestamp order %v", got, want)
	}
	for _, want := range []string{"note: --trace: the timestamps were out of order", "replaying 5 request(s) of "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !regexp.MustCompile(`(?m)^trace +gateway +5 of 5 requests of .* \(mooncake\) at speed 4; behind schedule p50 [0-9.]+, p99 [0-9.]+, max [0-9.]+ ms; timestamps sorted$`).MatchString(out) {
		t.Errorf("no trace line in the stream block:\n%s", out)
	}
	if !strings.Contains(out, "=== by size (gateway) ===\n") || !strings.Contains(out, "usage          gateway  5 compared: 5 intact\n") {
		t.Errorf("no breakdown by size or usage line:\n%s", out)
	}
	d := readDoc(t, js)
	rp := d.Replay
	if rp == nil || rp.Entries != 5 || rp.Replayed != 5 || !rp.Sorted || rp.Speed != 4 || rp.Format != "mooncake" || rp.StoppedBy != "" {
		t.Fatalf("replay %+v", rp)
	}
	gw := d.Gateway()
	if gw.StartLateness == nil || gw.StartLateness.N != 5 || gw.Usage == nil || gw.Usage.Compared != 5 || gw.Usage.Intact != 5 {
		t.Errorf("start lateness %+v, usage %+v", gw.StartLateness, gw.Usage)
	}
	// Prompts of 256 B, 1200 B, 4k, 6k and 8k: buckets <1k, 1k-4k, 4k-16k.
	var prompt []int
	for _, b := range gw.Sizes.Prompt {
		prompt = append(prompt, b.Requests)
	}
	if !slices.Equal(prompt, []int{1, 1, 3}) {
		t.Errorf("requests by prompt size %v, want [1 1 3]", prompt)
	}
	if d.Config.Trace == "" || d.Config.Requests != 5 || d.Config.TraceSpeed != 4 {
		t.Errorf("config trace %q, %d requests, speed %v", d.Config.Trace, d.Config.Requests, d.Config.TraceSpeed)
	}
}

// TestTraceBounds: --trace-limit and --duration stop a replay with a note;
// a bad line is an error naming its line and field, or with
// --trace-skip-bad skipped and counted; a trace excludes the flags that
// would contradict it.
func TestTraceBounds(t *testing.T) {
	tr := tempFile(t, "t.jsonl", testTrace)
	bad := tempFile(t, "bad.jsonl", testTrace+`{"timestamp": 90, "input_length": -4, "output_length": 1}`+"\n")
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		stderr    string
		requests  int
		stoppedBy string
	}{
		{"limit", []string{"--trace", tr, "--trace-limit", "2"}, ExitOK, "the trace has 5 requests; --trace-limit stops the replay after 2", 2, "--trace-limit"},
		// At speed 0.5 the offsets are 0, 40, 80, 120 and 160 ms.
		{"duration", []string{"--trace", tr, "--trace-speed", "0.5", "--duration", "100ms"}, ExitOK, "--duration stops the replay after 3", 3, "--duration"},
		{"bad line", []string{"--trace", bad}, ExitFailure, "line 6: input_length: -4 is outside", 0, ""},
		{"bad line skipped", []string{"--trace", bad, "--trace-skip-bad"}, ExitOK, "1 bad line skipped (first: bad trace line: line 6: input_length", 5, ""},
		{"missing file", []string{"--trace", tr + ".none"}, ExitFailure, "no such file", 0, ""},
		{"with -r", []string{"--trace", tr, "-r", "3"}, ExitFailure, "not with --requests", 0, ""},
		{"with -n", []string{"--trace", tr, "-n", "5"}, ExitFailure, "not with --tokens", 0, ""},
		{"with --rate", []string{"--trace", tr, "--rate", "5"}, ExitFailure, "not with --rate", 0, ""},
		{"speed", []string{"--trace", tr, "--trace-speed", "0"}, ExitFailure, "--trace-speed 0: want", 0, ""},
		{"speed without a trace", []string{"--trace-speed", "2"}, ExitFailure, "--trace-speed needs --trace", 0, ""},
		{"cache block", []string{"--cache-block", "3"}, ExitFailure, "--cache-block 3: want 0", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := testutil.Listen(t)
			self := ln.Addr().String()
			js := filepath.Join(t.TempDir(), "run.json")
			args := append([]string{"-L", self, "-t", self, "-d", "0.5", "-q", "--json", js}, tc.args...)
			code, out, errOut := runOn(t, nil, ln, args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d, want %d, and stderr containing %q:\n%s\n%s", code, tc.code, tc.stderr, out, errOut)
			}
			if code != ExitOK {
				return
			}
			d := readDoc(t, js)
			if d.Gateway().Requests != tc.requests || d.Replay.StoppedBy != tc.stoppedBy {
				t.Errorf("%d gateway requests, stopped by %q; want %d, %q", d.Gateway().Requests, d.Replay.StoppedBy, tc.requests, tc.stoppedBy)
			}
		})
	}
}

// TestDistributionRepeats: -n and --prompt-bytes distributions drawn from
// --seed give each request its own length, recorded in the document; the
// same seed repeats the run's lengths exactly, whatever the concurrency,
// another seed draws others.
func TestDistributionRepeats(t *testing.T) {
	lengthsFile := tempFile(t, "lengths.txt", "2\n9\n17\n")
	run := func(seed, c string, n string) ([]int, *rundoc.Document) {
		ln := testutil.Listen(t)
		self := ln.Addr().String()
		dir := t.TempDir()
		js, csv := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.csv")
		code, out, errOut := runOn(t, nil, ln, "-L", self, "-t", self, "-r", "8", "-c", c, "-n", n, "--prompt-bytes", "uniform:100-3k",
			"--seed", seed, "-d", "0.5", "-q", "--json", js, "--csv", csv)
		if code != ExitOK {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		return tokensPerRequest(t, csv, "gw"), readDoc(t, js)
	}
	a, doc := run("7", "1", "uniform:3-40")
	b, _ := run("7", "4", "uniform:3-40")
	c, _ := run("8", "1", "uniform:3-40")
	if !slices.Equal(a, b) {
		t.Errorf("seed 7 drew %v at -c 1 and %v at -c 4: want the same lengths", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 7 and 8 drew the same lengths %v", a)
	}
	if slices.Min(a) == slices.Max(a) || slices.Min(a) < 3 || slices.Max(a) > 40 {
		t.Errorf("lengths %v: want lengths from 3 to 40, not all equal", a)
	}
	if cfg := doc.Config; cfg.TokensDist != "uniform:3-40" || cfg.PromptBytesDist != "uniform:100-3k" || cfg.Seed != 7 {
		t.Errorf("config records tokens %q, prompt %q, seed %d", cfg.TokensDist, cfg.PromptBytesDist, cfg.Seed)
	}
	if len(doc.Gateway().Sizes.Prompt) < 2 {
		t.Errorf("prompt sizes %+v: want more than one bucket", doc.Gateway().Sizes.Prompt)
	}
	f, _ := run("1", "2", "file:"+lengthsFile)
	for _, n := range f {
		if n != 2 && n != 9 && n != 17 {
			t.Errorf("lengths %v drawn from a file of 2, 9 and 17", f)
			break
		}
	}
	// A plain -n still means exactly what it did.
	p, doc := run("1", "2", "12")
	if slices.Min(p) != 12 || slices.Max(p) != 12 || doc.Config.TokensDist != "" || doc.Config.Tokens != 12 {
		t.Errorf("-n 12: lengths %v, config tokens %d dist %q", p, doc.Config.Tokens, doc.Config.TokensDist)
	}
}

// TestUsageThroughFaultyGateways runs through in-process gateways that
// rewrite the usage and finds each in the stream block and the document:
// one that zeroes the null cache figures (the server has no cache:
// --cache-block 0), one that drops prompt_tokens_details (the server's
// cache has figures).
func TestUsageThroughFaultyGateways(t *testing.T) {
	zero := regexp.MustCompile(`"cached_tokens":null`)
	details := regexp.MustCompile(`,"prompt_tokens_details":\{[^}]*\}`)
	for _, tc := range []struct {
		name    string
		rewrite func([]byte) []byte
		args    []string
		line    string
		kind    string
	}{
		{"zeroes nulls", func(b []byte) []byte { return zero.ReplaceAll(b, []byte(`"cached_tokens":0`)) }, []string{"--cache-block", "0"},
			"usage          gateway  3 compared: 3 with findings: zeroed_from_null usage chunk prompt_tokens_details.cached_tokens (3: null -> 0)\n", "zeroed_from_null"},
		{"drops details", func(b []byte) []byte { return details.ReplaceAll(b, nil) }, nil,
			"usage          gateway  3 compared: 3 with findings: dropped usage chunk prompt_tokens_details.cached_tokens (3: 0 -> absent)\n", "dropped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backendLn := testutil.Listen(t)
			backend := backendLn.Addr().String()
			g := testutil.StartGateway(t, testutil.GatewayOptions{RewriteEvent: tc.rewrite})
			g.SetUpstream(backend)
			js := filepath.Join(t.TempDir(), "run.json")
			args := append([]string{"-L", backend, "-t", g.Addr, "-r", "3", "-n", "5", "-d", "0.5", "--include-usage", "-q", "--json", js}, tc.args...)
			code, out, errOut := runOn(t, nil, backendLn, args...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if !strings.Contains(out, tc.line) || !strings.Contains(out, "usage          loopback 3 compared: 3 intact\n") {
				t.Errorf("stream block lacks %q and the loopback's intact line:\n%s", tc.line, out)
			}
			u := readDoc(t, js).Gateway().Usage
			if u == nil || u.Compared != 3 || u.Intact != 0 || len(u.Findings) != 1 || u.Findings[0].Kind != tc.kind || u.Findings[0].Count != 3 {
				t.Errorf("usage %+v", u)
			}
		})
	}
}
