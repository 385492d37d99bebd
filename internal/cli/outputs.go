package cli

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/rundoc"
)

// outputs are the files a run writes (--json, --html, --csv), created
// (see outFile) before the run's server starts, so that a path that cannot
// be written fails the run at once instead of after the whole measurement.
// The document files are filled at the end; the CSV file is streamed into
// as the requests finish. Each replaces its path when it is complete.
type outputs struct {
	docs   []*docFile
	csv    *report.CSVWriter // nil without --csv
	csvOut *outFile          // its file
	stdout io.Writer         // where --json - goes
	toJSON bool              // --json -
}

// docFile is a document file created for the end of the run.
type docFile struct {
	flag, path string
	out        *outFile
	write      func(io.Writer, *rundoc.Document) error
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

// openOutputs creates the files cfg names. On an error nothing is left
// open or behind.
func openOutputs(cfg Config, stdout io.Writer) (*outputs, error) {
	o := &outputs{stdout: stdout, toJSON: cfg.JSONPath == "-"}
	for _, d := range []*docFile{
		{flag: "--json", path: cfg.JSONPath, write: rundoc.WriteJSON},
		{flag: "--html", path: cfg.HTMLPath, write: report.WriteHTML},
	} {
		if d.path == "" || (d.flag == "--json" && d.path == "-") {
			continue
		}
		var err error
		if d.out, err = createOutFile(d.flag, d.path); err != nil {
			o.abandon()
			return nil, err
		}
		o.docs = append(o.docs, d)
	}
	if p := cfg.CSVPath; p != "" {
		f, err := createOutFile("--csv", p)
		if err != nil {
			o.abandon()
			return nil, err
		}
		o.csvOut, o.csv = f, report.NewCSVWriter(f)
	}
	return o, nil
}

// abandon removes what the outputs of a run that did not get to write them
// created, leaving the files they name as they were. After writeDocument
// and closeCSV, or on a nil outputs, it does nothing.
func (o *outputs) abandon() {
	if o == nil {
		return
	}
	for _, d := range o.docs {
		d.out.abandon()
	}
	o.docs = nil
	o.csvOut.abandon()
	o.csv, o.csvOut = nil, nil
}

// closeCSV flushes the --csv file and puts it in place, once.
func (o *outputs) closeCSV() error {
	if o.csv == nil {
		return nil
	}
	err := o.csv.Close()
	if err != nil {
		o.csvOut.abandon()
		err = fmt.Errorf("--csv: %w", err)
	} else {
		err = o.csvOut.commit(nil)
	}
	o.csv, o.csvOut = nil, nil
	return err
}

// writeDocument writes doc to --json (a file or stdout) and --html, and
// puts their files in place; it returns the first error, naming its flag.
func (o *outputs) writeDocument(doc *rundoc.Document) error {
	var first error
	if o.toJSON {
		if err := rundoc.WriteJSON(o.stdout, doc); err != nil {
			first = fmt.Errorf("--json: %w", err)
		}
	}
	for _, d := range o.docs {
		err := d.out.commit(func(w io.Writer) error { return d.write(w, doc) })
		if err != nil && first == nil {
			first = err
		}
	}
	o.docs = nil
	return first
}
