package report

import (
	"strings"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// adviceText is the advice of a verdict as the text block and the HTML
// box word it.
type adviceText struct {
	Heading string       // "advice for lighttpd:", or for a gateway not identified the generic advice's heading
	Items   []adviceItem // one per finding, most telling first
	Causes  []string     // a document written before the advice: its causes, one line each
}

// adviceItem is one piece of advice in words.
type adviceItem struct {
	Finding   string   // "whole response"
	Setting   string   // what to change
	Snippet   []string // the configuration, one line each
	Reference string
	Others    []string // "if your gateway is nginx: set proxy_buffering off …"
}

// adviceWords words the advice of v for the gateway id: the identified
// gateway's heading, or the generic one with the other gateways' settings
// as "if your gateway is …". A document written before the advice table
// keeps its causes, as it listed them.
func adviceWords(v verdict.Verdict, id *gateway.Identity) adviceText {
	if len(v.Advice) == 0 {
		if len(v.Causes) == 0 {
			return adviceText{}
		}
		return adviceText{Heading: "likely causes, most likely first:", Causes: v.Causes}
	}
	t := adviceText{Heading: "advice (the gateway was not identified: --gateway NAME gives its own):"}
	if id.Known() {
		t.Heading = "advice for " + id.Name.Title() + ":"
	}
	for _, a := range v.Advice {
		t.Items = append(t.Items, adviceItemOf(a))
	}
	return t
}

// adviceItemOf words one piece of advice.
func adviceItemOf(a gateway.Advice) adviceItem {
	it := adviceItem{Finding: advice.Title(advice.Key(a.Key)), Setting: a.Setting, Reference: a.Reference}
	if a.Snippet != "" {
		it.Snippet = strings.Split(a.Snippet, "\n")
	}
	for _, o := range a.Others {
		it.Others = append(it.Others, "if your gateway is "+o.Line())
	}
	return it
}

// writeAdvice prints the advice after the verdict's lines:
//
//	advice for lighttpd:
//	  - whole response: set server.stream-response-body = 2: …
//	      server.stream-response-body = 2
//	      https://redmine.lighttpd.net/projects/lighttpd/wiki/Server_stream-response-bodyDetails
//
// and for a gateway not identified, the generic advice, then one line per
// known gateway: "      if your gateway is nginx: set proxy_buffering off …".
func writeAdvice(p *printer, t adviceText) {
	if t.Heading == "" {
		return
	}
	p.printf("%s\n", t.Heading)
	for _, c := range t.Causes {
		p.printf("  - %s\n", c)
	}
	for _, it := range t.Items {
		p.printf("  - %s: %s\n", it.Finding, it.Setting)
		for _, l := range it.Snippet {
			p.printf("      %s\n", l)
		}
		if it.Reference != "" {
			p.printf("      %s\n", it.Reference)
		}
		for _, o := range it.Others {
			p.printf("      %s\n", o)
		}
	}
}
