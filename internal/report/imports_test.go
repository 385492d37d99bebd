package report_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReportDoesNotImportTheIOStack fails when the renderer depends,
// however indirectly, on the packages that do I/O: the check itself, the
// client, the dummy server or the event loops. report renders results; it
// takes the check's rows from the leaf package checkreport.
func TestReportDoesNotImportTheIOStack(t *testing.T) {
	const module = "github.com/sse-latency/sse-latency/internal/"
	out, err := exec.Command("go", "list", "-deps", module+"report").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := map[string]bool{module + "check": true, module + "client": true, module + "server": true, module + "evloop": true}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		if forbidden[dep] {
			t.Errorf("report imports %s (transitively)", dep)
		}
	}
}
