package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadOutputPathFailsBeforeAnyRequest: every command that writes files
// creates them first; a path that cannot be written fails it at once,
// naming the path, and no request reaches the gateway. The gateway is a
// listener nothing accepts on while the command runs: after it, a marker
// connection of the test's own must be the first in its queue.
func TestBadOutputPathFailsBeforeAnyRequest(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "no-such-dir", "out")
	doc := filepath.Join(dir, "run.json")
	if err := os.WriteFile(doc, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string // after the gateway's -t
		want string
	}{
		{"run --json", []string{"--json", bad + ".json"}, "--json: open " + bad + ".json: no such file or directory"},
		{"run --html", []string{"--html", bad + ".html"}, "--html: open " + bad + ".html: no such file or directory"},
		{"run --csv", []string{"--csv", bad + ".csv"}, "--csv: open " + bad + ".csv: no such file or directory"},
		{"run --json a directory", []string{"--json", dir}, "--json: open " + dir + ": is a directory"},
		{"sweep --json", []string{"--json", bad + ".json", "-c", "1,2"}, "--json: open " + bad + ".json: no such file or directory"},
		{"check --html", []string{"--html", bad + ".html"}, "--html: open " + bad + ".html: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer gw.Close()
			args := append([]string{"-L", "127.0.0.1:0", "-t", gw.Addr().String()}, tt.args...)
			if cmd, _, _ := strings.Cut(tt.name, " "); cmd != "run" {
				args = append([]string{cmd}, args...)
			}
			if !strings.HasPrefix(tt.name, "check") {
				args = append(args, "-q")
			}
			var out, errOut bytes.Buffer
			code, _ := Measure(context.Background(), args, &out, &errOut)
			if code != ExitFailure || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d, stderr\n%s\nwant 1 and %q", code, errOut.String(), tt.want)
			}
			marker, err := net.Dial("tcp", gw.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer marker.Close()
			first, err := gw.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			if first.RemoteAddr().String() != marker.LocalAddr().String() {
				t.Errorf("the gateway was connected to (from %s) before the bad path failed the command", first.RemoteAddr())
			}
		})
	}
	// report --html: the document is not read (nor its error reported)
	// before the output is created.
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"report", "--html", bad + ".html", filepath.Join(dir, "missing.json")}, &out, &errOut)
	if want := "--html: open " + bad + ".html: no such file or directory"; code != ExitFailure || !strings.Contains(errOut.String(), want) {
		t.Errorf("report: exit %d, stderr\n%s\nwant 1 and %q", code, errOut.String(), want)
	}
}

// TestOutFileReplacesAtomically: an existing file keeps its content (and
// its inode: a reader holding it open reads the old content to the end)
// until commit renames the finished file over it, with the old file's
// permissions; nothing is left beside it; abandon leaves it as it was.
func TestOutFileReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	old := bytes.Repeat([]byte("old "), 1<<16)
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	o, err := createOutFile("--json", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write([]byte("streamed, ")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, old) {
		t.Fatalf("before commit the file reads %d bytes, %v; want the old %d", len(b), err, len(old))
	}
	if err := o.commit(func(w io.Writer) error { _, err := io.WriteString(w, "then the rest\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "streamed, then the rest\n" {
		t.Errorf("after commit the file reads %q, %v", b, err)
	}
	if b, err := io.ReadAll(reader); err != nil || !bytes.Equal(b, old) {
		t.Errorf("a reader of the old file read %d bytes, %v; want the old %d (the file was rewritten in place)", len(b), err, len(old))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the new file's mode: %v, %v; want the old file's 0600", fi.Mode(), err)
	}
	o.abandon() // after commit: nothing to do
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only the file: %v", len(entries), entries)
	}

	// A failed write and an abandoned file leave the path as it was.
	o, err = createOutFile("--json", path)
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("broken pipe of the renderer")
	if err := o.commit(func(io.Writer) error { return broken }); !errors.Is(err, broken) || !strings.HasPrefix(err.Error(), "--json: ") {
		t.Errorf("commit of a failed write = %v, want the error after --json", err)
	}
	if o, err = createOutFile("--json", path); err != nil {
		t.Fatal(err)
	}
	o.abandon()
	if b, err := os.ReadFile(path); err != nil || string(b) != "streamed, then the rest\n" {
		t.Errorf("after a failed write and an abandon the file reads %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only the file: %v", len(entries), entries)
	}
	// A new file gets 0644.
	fresh := filepath.Join(dir, "fresh.html")
	if o, err = createOutFile("--html", fresh); err != nil {
		t.Fatal(err)
	}
	if err := o.commit(nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("a new file's mode: %v, %v; want 0644", fi.Mode(), err)
	}
}
