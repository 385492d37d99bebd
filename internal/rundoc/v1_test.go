package rundoc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// v1Documents are documents of schema_version 1 written by the tool before
// the summary model and the typed configuration (testdata/v1, with the
// text each run printed): a run with failures, one with keep-alive, open
// loop and warm-up, one that warned of its own overload.
var v1Documents = []string{"fail", "open", "w1"}

func readV1(t *testing.T, name string) *Document {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "v1", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := ReadJSON(f)
	if err != nil {
		t.Fatalf("ReadJSON(v1/%s.json): %v", name, err)
	}
	return d
}

// TestVersion1Documents: the documents earlier versions wrote still read,
// write back to a fixed point, merge with themselves and compare; two of
// different configurations are refused with the fields named.
func TestVersion1Documents(t *testing.T) {
	for _, name := range v1Documents {
		d := readV1(t, name)
		first := marshal(t, d)
		again, err := ReadJSON(bytes.NewReader(first))
		if err != nil {
			t.Fatalf("%s: ReadJSON(WriteJSON(v1)): %v", name, err)
		}
		if second := marshal(t, again); !bytes.Equal(second, first) {
			t.Errorf("%s: WriteJSON(ReadJSON(WriteJSON(v1))) is not a fixed point", name)
		}
		m, err := Merge([]*Document{d, readV1(t, name)}, MergeOptions{})
		if err != nil {
			t.Fatalf("%s: Merge(itself): %v", name, err)
		}
		if g := m.Gateway(); g == nil || g.Requests != 2*d.Gateway().Requests || m.Config.Requests != 2*d.Config.Requests {
			t.Errorf("%s: merged with itself: %+v", name, m.Gateway())
		}
		var b bytes.Buffer
		if err := Compare(&b, d, m); err != nil || !strings.Contains(b.String(), "warning: the configurations differ in requests") {
			t.Errorf("%s: Compare(run, run merged with itself) = %v\n%s", name, err, b.String())
		}
	}
	// Written before --reasoning-field existed: read with its default.
	if c := readV1(t, "fail").Config; c.ReasoningField != "reasoning_content" || c.Arrival != "constant" || c.Reasoning != 0 {
		t.Errorf("v1/fail.json config reads reasoning_field %q, arrival %q, reasoning %d; want the defaults", c.ReasoningField, c.Arrival, c.Reasoning)
	}
	_, err := Merge([]*Document{readV1(t, "fail"), readV1(t, "open")}, MergeOptions{Names: []string{"fail.json", "open.json"}})
	if err == nil || !strings.Contains(err.Error(), "cannot merge fail.json and open.json: config differs in concurrency (2 vs 0), tokens (300 vs 30), ") {
		t.Errorf("Merge(fail, open) = %v, want a refusal naming tokens", err)
	}
}
