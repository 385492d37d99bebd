package api

// TestReferenceHints keeps docs/reference.md's hint and fault tables in
// step with the server: every fault key, every header or marker key and
// every pi_* JSON field of a request has a row, and no row names one the
// server does not know.

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// requestHintNames are the JSON fields (from the struct tags of the
// package's non-test files) and the header and marker keys (the cases of
// Hints.set, and faultKeys) a request's hints can use.
func requestHintNames(t *testing.T) (fields, keys map[string]bool) {
	t.Helper()
	fields, keys = map[string]bool{}, map[string]bool{}
	for _, k := range faultKeys {
		keys[k] = true
	}
	for _, f := range testutil.ParseSources(t, ".") {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					tag, _ := strconv.Unquote(n.Tag.Value)
					name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
					if strings.HasPrefix(name, "pi_") {
						fields[name] = true
					}
				}
			case *ast.FuncDecl:
				if n.Name.Name != "set" || n.Recv == nil || len(n.Recv.List) != 1 {
					return true
				}
				if star, ok := n.Recv.List[0].Type.(*ast.StarExpr); !ok || !isIdent(star.X, "Hints") {
					return true
				}
				ast.Inspect(n.Body, func(n ast.Node) bool {
					if cc, ok := n.(*ast.CaseClause); ok {
						for _, e := range cc.List {
							if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								k, _ := strconv.Unquote(lit.Value)
								keys[k] = true
							}
						}
					}
					return true
				})
				return false
			}
			return true
		})
	}
	return fields, keys
}

func TestReferenceHints(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var tables strings.Builder
	for _, h := range []string{"\n## Request hints\n", "\n## Fault hints and `--fault`\n"} {
		_, s, ok := strings.Cut(doc, h)
		if !ok {
			t.Fatalf("docs/reference.md has no section %q", strings.TrimSpace(h))
		}
		s, _, _ = strings.Cut(s, "\n## ")
		tables.WriteString(s)
	}
	docFields, docKeys := map[string]bool{}, map[string]bool{}
	span := regexp.MustCompile("`([a-z_]+)`")
	for _, ln := range strings.Split(tables.String(), "\n") {
		cells := strings.Split(ln, " | ")
		if !strings.HasPrefix(ln, "| `") || len(cells) < 3 {
			continue
		}
		for _, m := range span.FindAllStringSubmatch(cells[0], -1) {
			docFields[m[1]] = true
		}
		for _, m := range span.FindAllStringSubmatch(cells[1], -1) {
			docKeys[m[1]] = true
		}
	}
	fields, keys := requestHintNames(t)
	if len(fields) < 20 || len(keys) < 20 {
		t.Fatalf("found %d pi_* fields and %d keys in the code: is the pattern still right?", len(fields), len(keys))
	}
	for f := range fields {
		if !docFields[f] {
			t.Errorf("docs/reference.md: no hint row for the JSON field %s", f)
		}
	}
	for k := range keys {
		if !docKeys[k] {
			t.Errorf("docs/reference.md: no hint row for the header and marker key %s", k)
		}
	}
	for f := range docFields {
		if !fields[f] {
			t.Errorf("docs/reference.md: a hint row for the JSON field %s, which the server does not read", f)
		}
	}
	for k := range docKeys {
		if !keys[k] {
			t.Errorf("docs/reference.md: a hint row for the key %s, which the server does not read", k)
		}
	}
}

// isIdent reports whether e is the identifier name.
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
