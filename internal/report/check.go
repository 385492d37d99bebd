package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/check"
)

// checkHTMLTemplate is the page of a check's report, parsed at its first
// use (as htmlTemplate).
var checkHTMLTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("check.html.tmpl").ParseFS(htmlTemplateFS, "templates/check.html.tmpl"))
})

// checkNameWidth is the width of the name column of the text rows: the
// longest scenario name.
const checkNameWidth = 16

// WriteCheckHeader writes the line a check's text report starts with:
//
//	sse-latency check of 127.0.0.1:8080 (api chat); its dummy server on 127.0.0.1:8090
func WriteCheckHeader(w io.Writer, target, api, server string) error {
	_, err := fmt.Fprintf(w, "sse-latency check of %s (api %s); its dummy server on %s\n", target, api, server)
	return err
}

// WriteCheckRow writes one row of a check: its status, name, what it
// checks and the evidence, then, for a row that did not pass, the likely
// fix on a line of its own.
//
//	PASS  flush             flushes every event: each token arrived on its own, 0.061 ms after its emission (p50)
//	FAIL  upstream-cut      an upstream cut reaches the client: the gateway ended its response cleanly after 3 of 10 tokens …
//	                        fix: when the upstream fails mid-stream, send an error event or abort …
func WriteCheckRow(w io.Writer, r check.Row) error {
	p := printer{w: w}
	p.printf("%-4s  %-*s  %s: %s\n", r.Status, checkNameWidth, r.Name, r.Title, r.Evidence)
	if r.Fix != "" {
		p.printf("%*s  fix: %s\n", 4+2+checkNameWidth, "", r.Fix)
	}
	return p.err
}

// checkSummary is the last line of a check: the rows by status and the
// time it took.
func checkSummary(rep *check.Report) string {
	return fmt.Sprintf("%d checks: %d PASS, %d WARN, %d FAIL (%.1f s)", len(rep.Rows),
		rep.Count(check.Pass), rep.Count(check.Warn), rep.Count(check.Fail), rep.End.Sub(rep.Start).Seconds())
}

// WriteCheckSummary writes the summary line of a check.
func WriteCheckSummary(w io.Writer, rep *check.Report) error {
	_, err := fmt.Fprintln(w, checkSummary(rep))
	return err
}

// WriteCheckText writes a whole check's text report: the header, the rows,
// the summary.
func WriteCheckText(w io.Writer, rep *check.Report) error {
	if err := WriteCheckHeader(w, rep.Target, rep.Dialect, rep.Server); err != nil {
		return err
	}
	for _, r := range rep.Rows {
		if err := WriteCheckRow(w, r); err != nil {
			return err
		}
	}
	return WriteCheckSummary(w, rep)
}

// checkView is what the check page prints.
type checkView struct {
	Title   string
	Meta    []string
	Summary string
	Rows    []check.Row
}

// WriteCheckHTML writes a check's report as one self-contained, offline
// HTML page: its "Gateway check" section is the rows, coloured by status,
// with their evidence and fixes. Its bytes depend on rep only.
func WriteCheckHTML(w io.Writer, rep *check.Report) error {
	v := checkView{
		Title: "sse-latency check of " + rep.Target,
		Meta: []string{
			fmt.Sprintf("api %s; the dummy server on %s", rep.Dialect, rep.Server),
			fmt.Sprintf("%s to %s UTC", rep.Start.UTC().Format(time.DateTime), rep.End.UTC().Format(time.TimeOnly)),
			fmt.Sprintf("check schema version %d", rep.SchemaVersion),
		},
		Summary: checkSummary(rep),
		Rows:    rep.Rows,
	}
	var b bytes.Buffer
	if err := checkHTMLTemplate().Execute(&b, v); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}
