package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKubernetesExamplesFlags: every flag the Kubernetes manifests of
// examples/ give sse-latency is one it has (in its usage or the probe's),
// so that the manifests cannot drift from the command line.
func TestKubernetesExamplesFlags(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "kubernetes", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("manifests: %v, %v", files, err)
	}
	flagRE := regexp.MustCompile(`(?:^|[\s"'])(--[a-z][a-z0-9-]*)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range flagRE.FindAllStringSubmatch(string(data), -1) {
			n++
			if flag := m[1]; !strings.Contains(usage(), flag+" ") && !strings.Contains(probeUsage(), flag+" ") {
				t.Errorf("%s gives %s, which sse-latency does not have", f, flag)
			}
		}
		if n == 0 {
			t.Errorf("%s gives sse-latency no flag", f)
		}
	}
}
