package rundoc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadJSON feeds arbitrary bytes to ReadJSON, seeded with the golden
// documents and variants of them: it must not panic, and a document it
// reads must survive a round trip — written again, it reads again, and
// writing that gives the same bytes (WriteJSON∘ReadJSON is a fixed point
// after one round).
func FuzzReadJSON(f *testing.F) {
	for _, name := range []string{"json_full.golden", "json_no_calibration.golden"} {
		js, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
		// The failure kinds the Go tool added, and a text with escapes.
		timeout := `{
          "kind": "timeout",
          "count": 1,
          "texts": [
            {"text": "timeout after 300000ms", "count": 1}
          ],`
		if bytes.Contains(js, []byte(timeout)) {
			for _, repl := range []string{
				`"kind": "idle_timeout", "count": 1, "texts": [{"text": "idle timeout after 5000ms", "count": 1}],`,
				`"kind": "redirect", "count": 1, "texts": [{"text": "redirect 302 to /login", "count": 1}],`,
				`"kind": "bad_status", "count": 1, "texts": [{"text": "status HTTP/1.1 429 Too Many: {\"error\":\"\\u001b\"}", "count": 1}],`,
			} {
				f.Add(bytes.Replace(js, []byte(timeout), []byte("{"+repl), 1))
			}
		}
	}
	for _, s := range []string{``, `{}`, `[]`, `null`, `{"schema_version":1}`, `{"schema_version":2}`, `{"schema_version":1,"batches":[]}`,
		`{"schema_version":1,"start":"x"}`, `{"schema_version":"1"}`, strings.Repeat("[", 100)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		var first bytes.Buffer
		if err := WriteJSON(&first, d); err != nil {
			t.Fatalf("WriteJSON of a document ReadJSON accepted: %v", err)
		}
		d2, err := ReadJSON(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("ReadJSON(WriteJSON(ReadJSON(data))): %v\n%s", err, first.Bytes())
		}
		var second bytes.Buffer
		if err := WriteJSON(&second, d2); err != nil {
			t.Fatalf("WriteJSON, second round: %v", err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("WriteJSON(ReadJSON(js)) differs from js = WriteJSON(ReadJSON(data)):\n%s\nwant\n%s", second.Bytes(), first.Bytes())
		}
	})
}
