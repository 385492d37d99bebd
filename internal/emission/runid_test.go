package emission

import "testing"

// TestNewRunID: a run id is RunIDLen lowercase letters and digits, and two
// runs draw different ones.
func TestNewRunID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewRunID()
		if len(id) != RunIDLen {
			t.Fatalf("NewRunID() = %q: %d characters, want %d", id, len(id), RunIDLen)
		}
		for _, c := range id {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
				t.Fatalf("NewRunID() = %q: %q is not a lowercase letter or digit", id, c)
			}
		}
		seen[id] = true
	}
	if len(seen) < 99 {
		t.Errorf("100 run ids drew only %d distinct ones", len(seen))
	}
}
