package report_test

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestReportDoesNotImportTheIOStack fails when the renderer depends,
// however indirectly, on the packages that do I/O: the check itself, the
// client, the dummy server or the event loops. report renders results; it
// takes the check's rows from the leaf package checkreport.
func TestReportDoesNotImportTheIOStack(t *testing.T) {
	testutil.ImportsNone(t, "internal/report", "internal/check", "internal/client", "internal/server", "internal/evloop")
}
