//go:build !unix

package testutil

import "testing"

// RefusedAddr skips the test: it needs a socket bound without listening,
// which this package makes on Unix only.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	t.Skip("testutil.RefusedAddr: Unix only")
	return ""
}
