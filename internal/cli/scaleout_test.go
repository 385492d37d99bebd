package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sse-latency/sse-latency/internal/rundoc"
)

// podGateway is an in-process gateway (httputil.ReverseProxy) that routes
// /pod-<i>/… to instance i's server, as docs/scale-out.md's nginx does. It
// listens before any instance starts; an instance's route is added when it
// announces where its server listens (announce), which it does before it
// sends a request.
type podGateway struct {
	addr   string
	mu     sync.Mutex
	routes map[string]*url.URL // "pod-0" -> its server
}

func startPodGateway(t *testing.T) *podGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &podGateway{addr: ln.Addr().String(), routes: make(map[string]*url.URL)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(g.route(pr.In.URL.Path)) // the path stays: the server answers any path ending in its endpoint
		},
		FlushInterval: -1, // flush every event: an SSE-friendly gateway
		// A new backend connection per request: no pooled connection to an
		// instance that has ended.
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.route(r.URL.Path) == nil {
			http.Error(w, "no such pod", http.StatusBadGateway)
			return
		}
		// Stream the response while the request body is still open, or Go's
		// server may close the backend connection mid-stream.
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: handler}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return g
}

// route returns the server of the pod a path starts with, nil if unknown.
func (g *podGateway) route(path string) *url.URL {
	pod, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.routes[pod]
}

// listening is the line an instance prints once its server listens.
var listening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+) `)

// watched is a writer that keeps what is written to it and shows each
// write to on as it happens (one line at a time, as the console writes).
type watched struct {
	on  func(p []byte)
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.on(p)
	return len(p), nil
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// announcer is an instance's stderr: when the instance says where its
// server listens, it routes the instance's pod there.
func announcer(g *podGateway, pod string) *watched {
	return &watched{on: func(p []byte) {
		if m := listening.FindSubmatch(p); m != nil {
			g.mu.Lock()
			g.routes[pod] = &url.URL{Scheme: "http", Host: string(m[1])}
			g.mu.Unlock()
		}
	}}
}

// instance runs one sse-latency instance as docs/scale-out.md runs each
// pod: its own server on a port of its own, its requests through gateway g
// under --path /pod-<i>/…, its run saved to dir/run-<i>.json.
func instance(t *testing.T, g *podGateway, dir string, i int, extra ...string) string {
	t.Helper()
	pod := fmt.Sprintf("pod-%d", i)
	path := filepath.Join(dir, "run-"+fmt.Sprint(i)+".json")
	args := append([]string{"-L", "127.0.0.1:0", "-t", g.addr, "--path", "/" + pod + "/v1/chat/completions",
		"-r", "3", "-c", "3", "-n", "30", "-d", "0.5", "-q", "--json", path}, extra...)
	stderr := announcer(g, pod)
	var stdout bytes.Buffer
	if code, _ := Measure(context.Background(), args, &stdout, stderr); code != ExitOK {
		t.Errorf("instance %d: Measure(%q) = %d\nstdout:\n%s\nstderr:\n%s", i, args, code, stdout.String(), stderr.String())
	}
	return path
}

// subcommand runs an sse-latency subcommand and returns its exit status,
// stdout and stderr.
func subcommand(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code, _ := Measure(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestScaleOutRecipe runs docs/scale-out.md as written: three instances in
// parallel, each with its own --path prefix through one gateway that
// routes the prefix back to it, then `merge run-*.json`, `report` of the
// merged run with its HTML, and `compare`.
func TestScaleOutRecipe(t *testing.T) {
	g := startPodGateway(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { instance(t, g, dir, i) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	runs, err := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if err != nil || len(runs) != 3 {
		t.Fatalf("run-*.json: %q, %v; want 3 files", runs, err)
	}

	code, merged, errOut := subcommand(append([]string{"merge"}, runs...)...)
	if code != ExitOK {
		t.Fatalf("merge run-*.json: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "note: each run had its own path (3 values); config keeps ") || strings.Contains(errOut, "merged with --force") {
		t.Errorf("merge stderr:\n%s\nwant the per-instance note, no forced merge", errOut)
	}
	var doc struct {
		Runs   int `json:"runs"`
		Config struct {
			Requests    int    `json:"requests"`
			Concurrency int    `json:"concurrency"`
			Target      string `json:"target"`
		} `json:"config"`
		Batches []struct {
			Name     string `json:"name"`
			Requests int    `json:"requests"`
			OK       int    `json:"ok"`
			Tokens   int    `json:"tokens"`
		} `json:"batches"`
		Forced []string `json:"forced"`
	}
	if err := json.Unmarshal([]byte(merged), &doc); err != nil {
		t.Fatalf("merged document: %v\n%.300s", err, merged)
	}
	if doc.Runs != 3 || doc.Config.Requests != 9 || doc.Config.Concurrency != 9 || doc.Config.Target != g.addr || doc.Forced != nil ||
		len(doc.Batches) != 2 || doc.Batches[0].Requests != 9 || doc.Batches[1].Requests != 9 || doc.Batches[1].OK != 9 || doc.Batches[1].Tokens != 270 {
		t.Errorf("merged document %+v: want 3 runs, 9 requests at concurrency 9 through %s, both batches of 9 requests, 270 gateway tokens", doc, g.addr)
	}

	all, html := filepath.Join(dir, "all.json"), filepath.Join(dir, "all.html")
	if err := os.WriteFile(all, []byte(merged), 0o644); err != nil {
		t.Fatal(err)
	}
	code, text, errOut := subcommand("report", all, "--html", html, "--text")
	if code != ExitOK || !strings.Contains(text, "=== gateway: 9 requests, 9 ok, 0 failed, 270 tokens ===\n") ||
		!strings.Contains(text, "=== loopback (direct to listen address): 9 requests, 9 ok, 0 failed, 270 tokens ===\n") ||
		strings.Contains(errOut, "merged with --force") {
		t.Errorf("report all.json: exit %d\nstdout:\n%s\nstderr:\n%s", code, text, errOut)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("report --html: %v, %d bytes, want a page with charts", err, len(page))
	}
	if code, cmp, errOut := subcommand("compare", runs[0], all); code != ExitOK || !strings.Contains(cmp, "=== gateway: 3 requests") {
		t.Errorf("compare run-0.json all.json: exit %d\n%s%s", code, cmp, errOut)
	}
}

// TestMergeRefusals: runs through another gateway, or of another
// measurement, are refused with the field named; --force merges them and
// the merged run says so, in the document and in what report prints.
func TestMergeRefusals(t *testing.T) {
	g, other := startPodGateway(t), startPodGateway(t)
	dir := t.TempDir()
	run := instance(t, g, dir, 0)
	otherGateway := instance(t, other, t.TempDir(), 1)
	otherTokens := instance(t, g, t.TempDir(), 2, "-n", "20")
	if t.Failed() {
		t.FailNow()
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"another gateway", []string{"merge", run, otherGateway},
			fmt.Sprintf(`config differs in target (%q vs %q); --force merges them anyway`, g.addr, other.addr)},
		{"another measurement", []string{"merge", run, otherTokens}, "config differs in tokens (30 vs 20); --force merges them anyway"},
	}
	for _, tt := range tests {
		code, out, errOut := subcommand(tt.args...)
		if code != ExitFailure || out != "" || !strings.Contains(errOut, "sse-latency: cannot merge "+run+" and ") || !strings.Contains(errOut, tt.want) {
			t.Errorf("merge (%s): exit %d, stdout %d bytes, stderr %q; want 1, nothing, a refusal containing %q", tt.name, code, len(out), errOut, tt.want)
		}
	}

	code, merged, errOut := subcommand("merge", "--force", run, otherGateway, otherTokens)
	wantWarnings := []string{
		fmt.Sprintf(`warning: merged with --force although %s and %s: config differs in target (%q vs %q): `, run, otherGateway, g.addr, other.addr),
		fmt.Sprintf(`warning: merged with --force although %s and %s: config differs in tokens (30 vs 20): `, run, otherTokens),
	}
	if code != ExitOK {
		t.Fatalf("merge --force: exit %d\n%s", code, errOut)
	}
	for _, w := range wantWarnings {
		if !strings.Contains(errOut, w) {
			t.Errorf("merge --force stderr lacks %q:\n%s", w, errOut)
		}
	}
	var doc struct {
		Forced []string `json:"forced"`
	}
	if err := json.Unmarshal([]byte(merged), &doc); err != nil || len(doc.Forced) != 2 {
		t.Errorf("forced merge: forced %q, %v; want the 2 differences recorded", doc.Forced, err)
	}
	all := filepath.Join(dir, "forced.json")
	if err := os.WriteFile(all, []byte(merged), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = subcommand("report", all)
	for _, w := range wantWarnings {
		if code != ExitOK || !strings.Contains(errOut, w) {
			t.Errorf("report of the forced merge: exit %d, stderr lacks %q:\n%s", code, w, errOut)
		}
	}
}

// TestConfigRecorded: the configuration a run records is rundoc.Config,
// whose fields each have a merge rule; cli.Config adds only what is not
// recorded (the output paths). A setting added to cli.Config beside
// rundoc.Config would be recorded without a rule: this fails.
func TestConfigRecorded(t *testing.T) {
	keys := func(v any) []string {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	cfg := DefaultConfig()
	cfg.JSONPath, cfg.HTMLPath, cfg.CSVPath = "a.json", "a.html", "a.csv"
	if got, want := keys(cfg), keys(cfg.Config); !slices.Equal(got, want) {
		t.Errorf("cli.Config records %q, rundoc.Config %q", got, want)
	}
	// A document without a setting reads it as the default a run had.
	missing, def := reflect.ValueOf(rundoc.MissingSettings), reflect.ValueOf(cfg.Config)
	for i := range missing.NumField() {
		if m := missing.Field(i); !m.IsZero() && !reflect.DeepEqual(m.Interface(), def.Field(i).Interface()) {
			t.Errorf("rundoc.MissingSettings.%s = %v, but the default is %v", missing.Type().Field(i).Name, m, def.Field(i))
		}
	}
}
