package rundoc

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfigRules: every field of Config has a rule, the load fields are
// numbers that can be summed, and the gateway is the target and the Host
// header.
func TestConfigRules(t *testing.T) {
	byRule := make(map[Rule][]string)
	for _, f := range configFields() {
		byRule[f.rule] = append(byRule[f.rule], f.name)
	}
	want := map[Rule][]string{
		RuleGateway:  {"target", "host_header", "gateway"},
		RuleInstance: {"listen", "path", "cacert", "tls_cert", "tls_key", "engine", "control", "instance", "server", "gateway_pids", "cpus", "seed", "trace"},
		RuleSum:      {"requests", "concurrency", "rate", "warmup"},
		RuleConsole:  {"quiet", "verbose", "compat", "slos"},
	}
	for r, names := range want {
		if !slices.Equal(byRule[r], names) {
			t.Errorf("fields of rule %s = %q, want %q", r, byRule[r], names)
		}
	}
	if n := len(configFields()); n != reflect.TypeFor[Config]().NumField() || len(byRule[RuleSame]) != n-24 {
		t.Errorf("%d fields with rules, %d of them same", n, len(byRule[RuleSame]))
	}
	// The JSON keys are the fields' names in the messages.
	js, err := json.Marshal(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range configFields() {
		if !strings.Contains(string(js), `"`+f.name+`":`) {
			t.Errorf("field %s is not a JSON key of Config", f.name)
		}
	}
}

func TestConfigDiffs(t *testing.T) {
	base := Config{Target: "gw:80", Listen: ":1", Requests: 10, Concurrency: 2, Tokens: 100, Quiet: true, Headers: []string{"A: b"}}
	tests := []struct {
		name           string
		set            func(c *Config)
		merge, compare string // the differences, joined
	}{
		{"same", func(*Config) {}, "", ""},
		{"instance and console", func(c *Config) { c.Listen, c.Path, c.Quiet, c.Verbose = ":2", "/p/v1/chat/completions", false, true }, "", ""},
		{"gateway", func(c *Config) { c.Target = "gw:81" }, `target ("gw:80" vs "gw:81")`, ""},
		{"load amount", func(c *Config) { c.Requests, c.Concurrency = 20, 4 }, "", "requests (10 vs 20), concurrency (2 vs 4)"},
		{"load kind", func(c *Config) { c.Requests, c.Duration = 0, time.Second },
			"requests (10 vs 0), duration_ns (0 vs 1000000000)", "requests (10 vs 0), duration_ns (0 vs 1000000000)"},
		{"headers", func(c *Config) { c.Headers = nil }, `headers (["A: b"] vs null)`, `headers (["A: b"] vs null)`},
		{"float", func(c *Config) { c.DelayMs = 0.5 }, "delay_ms (0 vs 0.5)", "delay_ms (0 vs 0.5)"},
	}
	for _, tt := range tests {
		o := base
		o.Headers = slices.Clone(base.Headers)
		tt.set(&o)
		if got := joinDiffs(mergeDiffs(&base, &o)); got != tt.merge {
			t.Errorf("mergeDiffs(%s) = %q, want %q", tt.name, got, tt.merge)
		}
		if got := joinDiffs(compareDiffs(&base, &o)); got != tt.compare {
			t.Errorf("compareDiffs(%s) = %q, want %q", tt.name, got, tt.compare)
		}
	}
	sum := base
	sum.Rate, sum.Warmup = 2.5, 1
	o := sum
	sum.addLoad(&o)
	if sum.Requests != 20 || sum.Concurrency != 4 || sum.Rate != 5 || sum.Warmup != 2 || sum.Tokens != 100 || sum.Listen != ":1" {
		t.Errorf("addLoad: %+v, want the load doubled and the rest kept", sum)
	}
	a, b := base, base
	b.Listen, b.Path = ":2", "/x"
	c := base
	if got := instanceValues([]*Config{&a, &b, &c}); !slices.Equal(got, []string{"listen (2 values)", "path (2 values)"}) {
		t.Errorf("instanceValues = %q", got)
	}
}
