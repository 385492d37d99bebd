package testutil

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Module is the import path of sse-latency's module.
const Module = "github.com/sse-latency/sse-latency"

// ImportsNone fails the test if pkg (a path inside the module, as
// "internal/report") depends, directly or not, on any of the packages
// named (paths inside the module too), as `go list -deps` lists the
// dependencies of its non-test files.
func ImportsNone(t testing.TB, pkg string, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", Module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, Module+"/"+pkg) {
		t.Fatalf("go list -deps %s did not list it: %q", pkg, deps)
	}
	for _, f := range forbidden {
		if slices.Contains(deps, Module+"/"+f) {
			t.Errorf("%s imports %s (directly or not)", pkg, f)
		}
	}
}
