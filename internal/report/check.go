package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/check/checkreport"
	"github.com/sse-latency/sse-latency/internal/gateway"
)

// checkHTMLTemplate is the page of a check's report, parsed at its first
// use (as htmlTemplate).
var checkHTMLTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("check.html.tmpl").ParseFS(htmlTemplateFS, "templates/check.html.tmpl", "templates/advice.html.tmpl"))
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

// WriteCheckGateway writes the line that names the gateway, after the
// header once the pre-flight request has named it:
//
//	gateway: lighttpd/1.4.69 (Server header; local process 1234 lighttpd)
func WriteCheckGateway(w io.Writer, id *gateway.Identity) error {
	if id == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "gateway: %s\n", id.String())
	return err
}

// WriteCheckRow writes one row of a check: its status, name, what it
// checks and the evidence, then, for a row that did not pass, the fix on
// a line of its own — the identified gateway's setting, with the
// documentation that says so, or the generic fix and the known
// gateways' settings as "if your gateway is …".
//
//	PASS  flush             flushes every event: each token arrived on its own, 0.061 ms after its emission (p50)
//	FAIL  flush             flushes every event: buffered, whole response: 100% of the tokens arrived after …
//	                        fix: lighttpd: set server.stream-response-body = 2: …
//	                             https://redmine.lighttpd.net/projects/lighttpd/wiki/Server_stream-response-bodyDetails
//
// A row that counted its connections (the multiplex row: Row.Connections)
// says on how many its requests went, after the evidence: "; on 1
// connection", "; on 2 connections".
func WriteCheckRow(w io.Writer, r checkreport.Row) error {
	p := printer{w: w}
	p.printf("%-4s  %-*s  %s: %s%s\n", r.Status, checkNameWidth, r.Name, r.Title, r.Evidence, onConnections(r.Connections))
	indent := 4 + 2 + checkNameWidth
	if len(r.Advice) == 0 && r.Fix != "" {
		p.printf("%*s  fix: %s\n", indent, "", r.Fix)
	}
	for i, a := range r.Advice {
		lead := "fix:"
		if i > 0 {
			lead = " or:"
		}
		p.printf("%*s  %s %s\n", indent, "", lead, a.Line())
		if a.Reference != "" {
			p.printf("%*s       %s\n", indent, "", a.Reference)
		}
		for _, o := range a.Others {
			p.printf("%*s       if your gateway is %s\n", indent, "", o.Line())
		}
	}
	return p.err
}

// onConnections words a row's connections after its evidence, "" when
// it did not count them (0).
func onConnections(n int) string {
	switch {
	case n == 0:
		return ""
	case n == 1:
		return "; on 1 connection"
	}
	return fmt.Sprintf("; on %d connections", n)
}

// checkSummary is the last line of a check: the rows by status (SKIP
// only when a row skipped) and the time it took.
func checkSummary(rep *checkreport.Report) string {
	skipped := ""
	if n := rep.Count(checkreport.Skip); n > 0 {
		skipped = fmt.Sprintf(", %d SKIP", n)
	}
	return fmt.Sprintf("%d checks: %d PASS, %d WARN, %d FAIL%s (%.1f s)", len(rep.Rows),
		rep.Count(checkreport.Pass), rep.Count(checkreport.Warn), rep.Count(checkreport.Fail), skipped, rep.End.Sub(rep.Start).Seconds())
}

// WriteCheckSummary writes the summary line of a check.
func WriteCheckSummary(w io.Writer, rep *checkreport.Report) error {
	_, err := fmt.Fprintln(w, checkSummary(rep))
	return err
}

// WriteCheckText writes a whole check's text report: the header, the rows,
// the summary.
func WriteCheckText(w io.Writer, rep *checkreport.Report) error {
	if err := WriteCheckHeader(w, rep.Target, rep.Dialect, rep.Server); err != nil {
		return err
	}
	if err := WriteCheckGateway(w, rep.Gateway); err != nil {
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
	Rows    []checkRowView
}

// checkRowView is a row and its advice in words.
type checkRowView struct {
	checkreport.Row
	Advice adviceText
}

// WriteCheckHTML writes a check's report as one self-contained, offline
// HTML page: its "Gateway check" section is the rows, coloured by status,
// with their evidence and fixes. Its bytes depend on rep only.
func WriteCheckHTML(w io.Writer, rep *checkreport.Report) error {
	v := checkView{
		Title: "sse-latency check of " + rep.Target,
		Meta: []string{
			fmt.Sprintf("api %s; the dummy server on %s", rep.Dialect, rep.Server),
			fmt.Sprintf("%s to %s UTC", rep.Start.UTC().Format(time.DateTime), rep.End.UTC().Format(time.TimeOnly)),
			fmt.Sprintf("check schema version %d", rep.SchemaVersion),
		},
		Summary: checkSummary(rep),
	}
	if rep.Gateway != nil {
		v.Meta = slices.Insert(v.Meta, 0, "gateway: "+rep.Gateway.String())
	}
	for _, r := range rep.Rows {
		rv := checkRowView{Row: r}
		if len(r.Advice) > 0 {
			rv.Advice.Heading = "fix:"
			for _, a := range r.Advice {
				it := adviceItemOf(a)
				if a.Gateway != gateway.Unknown {
					it.Setting = a.Line()
				}
				rv.Advice.Items = append(rv.Advice.Items, it)
			}
		}
		v.Rows = append(v.Rows, rv)
	}
	var b bytes.Buffer
	if err := checkHTMLTemplate().Execute(&b, v); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}
