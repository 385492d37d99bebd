package cli

// TestReferenceFlags and TestReferenceExitStatuses keep docs/reference.md
// in step with the code: every flag of every command has a row there, no
// row names a flag the command lacks, and every exit status is listed.

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// referenceRow is one row of a flag table of docs/reference.md: the long
// and short names of its first cell.
type referenceRow struct {
	long, short []string
}

// referenceFlags reads the "## Flags" part of docs/reference.md: per
// command ("run" for `sse-latency` itself), its rows and whether its text
// says that every flag of a run applies to it.
func referenceFlags(t *testing.T) (rows map[string][]referenceRow, inheritsRun map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, flags, ok := strings.Cut(string(b), "\n## Flags\n")
	if !ok {
		t.Fatal(`docs/reference.md has no "## Flags" section`)
	}
	flags, _, _ = strings.Cut(flags, "\n## ")
	section := regexp.MustCompile("^### `sse-latency(?: ([a-z]+))?`")
	long := regexp.MustCompile("`(--[a-z0-9-]+)")
	short := regexp.MustCompile("`(-[A-Za-z])`")
	rows, inheritsRun = map[string][]referenceRow{}, map[string]bool{}
	cmd := ""
	for _, ln := range strings.Split(flags, "\n") {
		if m := section.FindStringSubmatch(ln); m != nil {
			cmd = m[1]
			if cmd == "" {
				cmd = cmdRun
			}
			continue
		}
		if cmd == "" {
			continue
		}
		if strings.Contains(ln, "Every flag of a") { // "… of a run applies", wrapped
			inheritsRun[cmd] = true
		}
		if !strings.HasPrefix(ln, "| `-") {
			continue
		}
		first := strings.SplitN(strings.TrimPrefix(ln, "|"), " | ", 2)[0]
		var r referenceRow
		for _, m := range long.FindAllStringSubmatch(first, -1) {
			r.long = append(r.long, strings.TrimPrefix(m[1], "--"))
		}
		for _, m := range short.FindAllStringSubmatch(first, -1) {
			r.short = append(r.short, strings.TrimPrefix(m[1], "-"))
		}
		rows[cmd] = append(rows[cmd], r)
	}
	return rows, inheritsRun
}

// registeredFlags are the names of every flag the non-test files of this
// package register on a flag set, by the function registering it: the
// first string literal of a pflag registration call (fs.Bool("text", …),
// fs.StringVarP(&x, "target", "t", …)).
func registeredFlags(t *testing.T) map[string][]string {
	t.Helper()
	register := regexp.MustCompile(`^(Bool|String|Int|Int64|Uint64|Float64|Duration|StringSlice|StringArray|IntSlice)?(Var)?P?$`)
	got := map[string][]string{}
	for _, f := range testutil.ParseSources(t, ".") {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name == "" || !register.MatchString(sel.Sel.Name) || sel.Sel.Name == "P" {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "fs" {
					return true
				}
				for _, a := range call.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						name, _ := strconv.Unquote(lit.Value)
						got[fn.Name.Name] = append(got[fn.Name.Name], name)
						break
					}
				}
				return true
			})
		}
	}
	return got
}

func TestReferenceFlags(t *testing.T) {
	rows, inheritsRun := referenceFlags(t)
	sets := commandFlagSets()
	inSet := func(fs *pflag.FlagSet, name string) bool { return fs.Lookup(name) != nil }
	for cmd, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			for _, r := range rows[cmd] {
				if slices.Contains(r.long, f.Name) {
					if f.Shorthand != "" && !slices.Contains(r.short, f.Shorthand) {
						t.Errorf("docs/reference.md, sse-latency %s: the row of --%s does not give its short form -%s", cmd, f.Name, f.Shorthand)
					}
					return
				}
			}
			if inheritsRun[cmd] && inSet(sets[cmdRun], f.Name) {
				return
			}
			t.Errorf("docs/reference.md, sse-latency %s: no row for the flag --%s", cmd, f.Name)
		})
		for _, r := range rows[cmd] {
			for _, name := range r.long {
				if !inSet(fs, name) {
					t.Errorf("docs/reference.md, sse-latency %s: a row for --%s, which the command does not have", cmd, name)
				}
			}
		}
	}
	// The other commands' flag sets are local to their functions: every
	// flag registered anywhere in the package has a row in some section,
	// and the rows of those sections name registered flags only.
	documented, registered := map[string]bool{}, map[string]bool{}
	for _, rs := range rows {
		for _, r := range rs {
			for _, name := range r.long {
				documented[name] = true
			}
		}
	}
	byFunc := registeredFlags(t)
	for fn, names := range byFunc {
		for _, name := range names {
			registered[name] = true
			if !documented[name] {
				t.Errorf("docs/reference.md: no row for the flag --%s (registered in %s)", name, fn)
			}
		}
	}
	if len(registered) < 60 {
		t.Fatalf("only %d flags found registered in the package's code: is the pattern of registeredFlags still right?", len(registered))
	}
	for cmd, rs := range rows {
		if sets[cmd] != nil {
			continue
		}
		if len(rs) == 0 {
			t.Errorf("docs/reference.md, sse-latency %s: a section without flag rows", cmd)
		}
		for _, r := range rs {
			for _, name := range r.long {
				if !registered[name] {
					t.Errorf("docs/reference.md, sse-latency %s: a row for --%s, which no code registers", cmd, name)
				}
			}
		}
	}
	for _, cmd := range []string{"report", "merge", "compare"} {
		if rows[cmd] == nil {
			t.Errorf("docs/reference.md: no flag section for sse-latency %s", cmd)
		}
	}
}

// TestReferenceExitStatuses: every Exit… constant of the package has a row
// of docs/reference.md's "## Exit status" table with its value and name.
func TestReferenceExitStatuses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Exit status\n")
	if !ok {
		t.Fatal(`docs/reference.md has no "## Exit status" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	found := 0
	for _, f := range testutil.ParseSources(t, ".") {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Exit") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.INT {
						continue
					}
					found++
					row := "| `" + lit.Value + "` | `cli." + id.Name + "` |"
					if !strings.Contains(table, row) {
						t.Errorf("docs/reference.md, Exit status: no row %q", row)
					}
				}
			}
		}
	}
	if found < 4 {
		t.Errorf("only %d Exit… constants found: is the pattern still right?", found)
	}
}
