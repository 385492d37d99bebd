package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/rundoc"
)

// outputs are the files a run writes (--json, --html, --csv). They are
// opened before the run's server starts, so that a path that cannot be
// written fails the run at once instead of after the whole measurement.
// The document files are filled at the end (an existing file is left as
// it was until then); the CSV file is streamed into, so it is truncated at
// once.
type outputs struct {
	docs       []*docFile
	csvFile    *os.File
	csvCreated bool              // the CSV file did not exist before: abandon removes it
	csv        *report.CSVWriter // nil without --csv
	stdout     io.Writer         // where --json - goes
	toJSON     bool              // --json -
}

// docFile is a document file opened for the end of the run.
type docFile struct {
	flag    string // "--json" or "--html"
	path    string
	f       *os.File
	created bool // it did not exist before: abandon removes it
	write   func(io.Writer, *rundoc.Document) error
}

// checkOutputs refuses output flags a run cannot honour: without -t
// nothing is measured, and two outputs may not share a file.
func checkOutputs(cfg Config) error {
	named := map[string]string{} // cleaned path -> flag
	for _, o := range []struct{ flag, path string }{{"--json", cfg.JSONPath}, {"--html", cfg.HTMLPath}, {"--csv", cfg.CSVPath}} {
		switch {
		case o.path == "":
			continue
		case cfg.Target == "":
			return fmt.Errorf("%s: nothing is measured without -t (server only)", o.flag)
		case o.flag == "--json" && o.path == "-": // stdout
			continue
		}
		p := filepath.Clean(o.path)
		if other, ok := named[p]; ok {
			return fmt.Errorf("%s and %s name the same file %s", other, o.flag, o.path)
		}
		named[p] = o.flag
	}
	return nil
}

// openOutputs opens the files cfg names, --csv last (it truncates its
// file). On an error nothing is left open, and the files it created are
// removed again.
func openOutputs(cfg Config, stdout io.Writer) (*outputs, error) {
	o := &outputs{stdout: stdout, toJSON: cfg.JSONPath == "-"}
	for _, d := range []*docFile{
		{flag: "--json", path: cfg.JSONPath, write: rundoc.WriteJSON},
		{flag: "--html", path: cfg.HTMLPath, write: report.WriteHTML},
	} {
		if d.path == "" || (d.flag == "--json" && d.path == "-") {
			continue
		}
		if err := d.open(); err != nil {
			o.abandon()
			return nil, err
		}
		o.docs = append(o.docs, d)
	}
	if p := cfg.CSVPath; p != "" {
		o.csvCreated = !exists(p)
		f, err := os.Create(p)
		if err != nil {
			o.abandon()
			return nil, fmt.Errorf("--csv: %w", err)
		}
		o.csvFile, o.csv = f, report.NewCSVWriter(f)
	}
	return o, nil
}

// exists reports whether path names a file (whatever its kind).
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// open opens the file for writing without truncating it, creating it if
// needed.
func (d *docFile) open() error {
	d.created = !exists(d.path)
	f, err := os.OpenFile(d.path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", d.flag, err)
	}
	d.f = f
	return nil
}

// abandon closes what is still open of the outputs of a run that did not
// get to write them, and removes the files it created (an earlier
// document is left as it was; an earlier CSV file was truncated, as the
// run began to stream into it). It is a best-effort clean-up on the way
// out of a failed run: its own errors have nothing left to change. After
// writeDocument and closeCSV, or on a nil outputs, it does nothing.
func (o *outputs) abandon() {
	if o == nil {
		return
	}
	for _, d := range o.docs {
		d.f.Close()
		if d.created {
			os.Remove(d.path)
		}
	}
	o.docs = nil
	if o.csvFile != nil {
		o.csvFile.Close()
		if o.csvCreated {
			os.Remove(o.csvFile.Name())
		}
		o.csvFile, o.csv = nil, nil
	}
}

// closeCSV flushes and closes the --csv file, once.
func (o *outputs) closeCSV() error {
	if o.csv == nil {
		return nil
	}
	err := o.csv.Close()
	if cerr := o.csvFile.Close(); err == nil {
		err = cerr
	}
	o.csv, o.csvFile = nil, nil
	if err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	return nil
}

// writeDocument writes doc to --json (a file or stdout) and --html, and
// closes their files; it returns the first error, naming its flag.
func (o *outputs) writeDocument(doc *rundoc.Document) error {
	var first error
	if o.toJSON {
		if err := rundoc.WriteJSON(o.stdout, doc); err != nil {
			first = fmt.Errorf("--json: %w", err)
		}
	}
	for _, d := range o.docs {
		if err := d.fill(doc); err != nil && first == nil {
			first = err
		}
	}
	o.docs = nil
	return first
}

// fill replaces the file's content with doc and closes it.
func (d *docFile) fill(doc *rundoc.Document) error {
	err := d.f.Truncate(0)
	if err == nil {
		err = d.write(d.f, doc)
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", d.flag, err)
	}
	return nil
}
