package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// checkGolden compares got, the output of what, with testdata/name, or
// rewrites that file under -update.
func checkGolden(t *testing.T, what, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run go test -update to create it)", what, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n--- got\n%s--- want\n%s", what, path, got, want)
	}
}
