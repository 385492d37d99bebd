package report

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// checkGolden compares got, the output of what, with testdata/name, or
// rewrites that file under -update.
func checkGolden(t *testing.T, what, name string, got []byte) {
	t.Helper()
	t.Logf("checking %s against testdata/%s", what, name)
	summarytest.Golden(t, name, got, *update)
}
