package summarytest_test

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestImportsOnlyDownward fails when the fixtures import a package that
// imports summary (slo, sweep, rundoc, report): the tests of those
// packages use them. Fixtures that need them live in rundoctest.
func TestImportsOnlyDownward(t *testing.T) {
	testutil.ImportsNone(t, "internal/summary/summarytest", "internal/slo", "internal/sweep", "internal/rundoc", "internal/report")
}
