package docs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// markdownFiles are README.md, every Markdown file under docs/ and the
// READMEs of examples/, as paths from the root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

var (
	fence     = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan  = regexp.MustCompile("`[^`]*`")
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	inlineLnk = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	scheme    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	readmeRef = regexp.MustCompile(`README\.md, "([^"]+)"`)
)

// prose returns the lines of a Markdown text outside fenced code blocks.
func prose(text string) []string {
	var out []string
	in := false
	for _, ln := range strings.Split(text, "\n") {
		if fence.MatchString(ln) {
			in = !in
			continue
		}
		if !in {
			out = append(out, ln)
		}
	}
	return out
}

// slug is GitHub's anchor for a heading's text: lower case, the Markdown
// of links and code dropped to their text, every character but letters,
// digits, spaces, '-' and '_' removed, spaces turned into '-'.
func slug(h string) string {
	h = inlineLnk.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors are the anchors of a Markdown text's headings, a repeated one
// numbered as GitHub does (x, x-1, x-2), and its explicit <a id> anchors.
func anchors(text string) map[string]bool {
	got := map[string]bool{}
	seen := map[string]int{}
	for _, ln := range prose(text) {
		for _, m := range htmlID.FindAllStringSubmatch(ln, -1) {
			got[m[1]] = true
		}
		m := heading.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			got[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			got[s] = true
		}
		seen[s]++
	}
	return got
}

// TestSlug pins the slug rule on headings of the docs.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Fault hints and `--fault`":                                   "fault-hints-and---fault",
		"`sse-latency check`: a report card for a gateway":            "sse-latency-check-a-report-card-for-a-gateway",
		"A CI gate that fails only beyond noise: `compare --fail-if`": "a-ci-gate-that-fails-only-beyond-noise-compare---fail-if",
		"Memory at -c 4000":                                           "memory-at--c-4000",
		"The [guide](x.md) and more":                                  "the-guide-and-more",
		"snake_case keys, 1.0 & 2.0":                                  "snake_case-keys-10--20",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	if a := anchors("# X\n## X\n```\n# not a heading\n```\n## X\n"); !a["x"] || !a["x-1"] || !a["x-2"] || a["not-a-heading"] {
		t.Errorf("anchors of repeated headings: %v", a)
	}
}

// TestLinksResolve: every relative link of README.md, docs/ and the
// examples' READMEs names a file or directory that exists, and every
// #anchor a heading of the file it points into. No network: links with a
// scheme (https:, mailto:) are not followed.
func TestLinksResolve(t *testing.T) {
	texts := map[string]string{}
	read := func(p string) (string, error) {
		if s, ok := texts[p]; ok {
			return s, nil
		}
		b, err := os.ReadFile(filepath.Join(root, p))
		texts[p] = string(b)
		return string(b), err
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		text, err := read(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, ln := range prose(text) {
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(ln, ""), -1) {
				target := m[1]
				if scheme.MatchString(target) {
					continue
				}
				checked++
				p, frag, _ := strings.Cut(target, "#")
				dest := file
				if p != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), p))
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s (prose line %d): link %q: %s does not exist", file, i+1, target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: link %q: an anchor into a file that is not Markdown", file, target)
					continue
				}
				dt, err := read(dest)
				if err != nil {
					t.Errorf("%s: link %q: %v", file, target, err)
					continue
				}
				if !anchors(dt)[frag] {
					t.Errorf("%s (prose line %d): link %q: %s has no heading with the anchor #%s", file, i+1, target, dest, frag)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d relative links found: is the link pattern still right?", checked)
	}
}

// TestREADMEFitsAFewScreens: the README stays short; the rest lives in
// docs/ (issue 22).
func TestREADMEFitsAFewScreens(t *testing.T) {
	const maxLines = 250
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to docs/", n, maxLines)
	}
}

// TestREADMEQuickStart: the quick start's two commands are there — a
// measurement needing nothing else installed, and the test command, which
// is exactly the one .ci/run runs.
func TestREADMEQuickStart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var ciTest []string
	for _, ln := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(strings.TrimSpace(ln), "go test ") {
			ciTest = append(ciTest, strings.TrimSpace(ln))
		}
	}
	if len(ciTest) != 1 {
		t.Fatalf(".ci/run: %d go test commands %q, want 1", len(ciTest), ciTest)
	}
	_, quick, ok := strings.Cut(string(b), "\n## Quick start\n")
	if !ok {
		t.Fatal(`README.md has no "## Quick start" section`)
	}
	quick, _, _ = strings.Cut(quick, "\n## ")
	lines := strings.Split(quick, "\n")
	for _, want := range []string{ciTest[0], "go run ./cmd/sse-latency -L 127.0.0.1:8090 -t 127.0.0.1:8090 -r 5 -c 5 -n 200"} {
		if !slices.Contains(lines, want) {
			t.Errorf("README.md's quick start has no line %q", want)
		}
	}
}

// TestJSONSchemaFieldsDescribed: every property the JSON Schema names is
// described in docs/json-schema.md (named in a code span there); the
// schema itself is checked against the tool's documents by rundoc's tests.
func TestJSONSchemaFieldsDescribed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "sse-latency.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if props, ok := x.(map[string]any); ok && k == "properties" {
					for name := range props {
						names[name] = true
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(schema)
	if len(names) < 100 {
		t.Fatalf("only %d properties in the schema: is the walk still right?", len(names))
	}
	md, err := os.ReadFile(filepath.Join(root, "docs", "json-schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	described := map[string]bool{}
	for _, span := range codeSpan.FindAllString(string(md), -1) {
		for _, w := range strings.FieldsFunc(span, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
			described[w] = true
		}
	}
	for name := range names {
		if !described[name] {
			t.Errorf("docs/json-schema.md does not describe the field %q of docs/sse-latency.schema.json", name)
		}
	}
}

// TestREADMESectionsNamedByTheCode: a file of the tree that sends its
// reader to a section of the README by name (the usage's `keys in
// README.md, "Fault hints"`) names a heading the README has.
func TestREADMESectionsNamedByTheCode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, ln := range prose(string(b)) {
		if m := heading.FindStringSubmatch(ln); m != nil {
			headings[m[2]] = true
		}
	}
	found := 0
	for _, dir := range []string{"cmd", "internal", "e2e", "examples", "bench"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			if ext := filepath.Ext(p); ext != ".go" && ext != ".txt" && ext != ".yaml" && ext != ".yml" && ext != ".sh" {
				return nil
			}
			text, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range readmeRef.FindAllStringSubmatch(string(text), -1) {
				found++
				if !headings[m[1]] {
					t.Errorf("%s sends its reader to the README's section %q, which README.md has no heading for", p, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == 0 {
		t.Error(`no file names a README section: the usage's pointer to "Fault hints" is gone? (then drop this test)`)
	}
}
