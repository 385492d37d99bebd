// Package ssetest holds what the tests of Server-Sent Events reading
// share: a table of conformance cases written from the WHATWG
// specification's rules and examples and the cases of two third-party
// suites (Cases), a plain transcription of the specification's algorithm
// to check a reader against (Interpret), and the ways a case is cut into
// reads (Chunkings). It imports nothing of the tool's.
package ssetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Framing is wire.Framing, field for field (this package imports nothing
// of the tool's, so that wire's own tests can use it): convert with
// wire.Framing(f).
type Framing struct {
	BOMs            int
	MultiLineEvents int
	NoDataBlocks    int
	BareCRLines     int
	InvalidUTF8     int
	IDFields        int
	RetryFields     int
}

// The rules of the WHATWG HTML specification, "Interpreting an event
// stream" (and of the Encoding Standard's "UTF-8 decode" it starts with),
// that the conformance cases check, by the step they cite.
const (
	ruleBOM      = "UTF-8 decode: one leading BOM is skipped"
	ruleUTF8     = "UTF-8 decode: each maximal subpart of an ill-formed sequence becomes U+FFFD"
	ruleLines    = "lines end in CRLF, a single LF or a single CR"
	ruleBlank    = "an empty line dispatches the event"
	ruleComment  = "a line starting with ':' is ignored"
	ruleColon    = "a line with ':': field before the first ':', value after it, one leading U+0020 removed"
	ruleNoColon  = "a line without ':': the whole line is the field name, the value is empty"
	ruleData     = "data: append the value, then a LF, to the data buffer"
	ruleEvent    = "event: set the event type buffer to the value"
	ruleID       = "id: set the last event ID buffer, unless the value contains NUL"
	ruleRetry    = "retry: only ASCII digits set the reconnection time"
	ruleUnknown  = "any other field is ignored"
	ruleLastID   = "dispatch step 1: the last event ID string takes the buffer, which persists"
	ruleEmpty    = "dispatch step 2: an empty data buffer dispatches nothing; data and type are emptied"
	ruleTrimLF   = "dispatch step 3: the data buffer's last LF is removed"
	ruleType     = "dispatch step 6: the type is the event type buffer, message when it is empty"
	ruleReset    = "dispatch step 7: the data and event type buffers are emptied"
	ruleEOF      = "at the end of the stream, an event without its blank line is discarded"
	ruleExamples = "the specification's examples"
)

// Event is an event as the conformance cases write it: its type
// ("message" by default), data and last event ID.
type Event struct{ Type, Data, ID string }

func (e Event) String() string { return fmt.Sprintf("{%s %q id %q}", e.Type, e.Data, e.ID) }

// msg is an event of the default type without an ID.
func msg(data string) Event { return Event{"message", data, ""} }

// Case is one stream, the rule it checks and its source, the events the
// specification dispatches for it, its last event ID and reconnection
// time, and, where the case is about them, the framing counts.
type Case struct {
	Name, Rule, Input string
	Want              []Event
	Framing           *Framing // nil: not given by the case (the reference model has them)
	Retry             int64    // -1: no valid retry field
	LastID            string
}

// Cases is the table. Cases come from the specification's examples
// ("spec"), the web-platform-tests eventsource/format-* cases ("wpt"),
// the eventsource-parser test suite ("esp"), the cases of issue 27
// ("issue") and the rules themselves ("rule"); each is written here from
// the facts of its source, not copied.
var Cases = []Case{
	// The specification's examples.
	{Name: "spec: three messages, one of two lines", Rule: ruleExamples,
		Input:   "data: This is the first message.\n\ndata: This is the second message, it\ndata: has two lines.\n\ndata: This is the third message.\n\n",
		Want:    []Event{msg("This is the first message."), msg("This is the second message, it\nhas two lines."), msg("This is the third message.")},
		Framing: &Framing{MultiLineEvents: 1}, Retry: -1},
	{Name: "spec: named events", Rule: ruleExamples,
		Input: "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
		Want:  []Event{{"add", "73857293", ""}, {"remove", "2153", ""}, {"add", "113411", ""}}, Retry: -1},
	{Name: "spec: stock ticker, three data lines", Rule: ruleExamples,
		Input: "data: YHOO\ndata: +2\ndata: 10\n\n", Want: []Event{msg("YHOO\n+2\n10")},
		Framing: &Framing{MultiLineEvents: 1}, Retry: -1},
	{Name: "spec: comment, ids, a bare id, two leading spaces", Rule: ruleExamples,
		Input:   ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
		Want:    []Event{{"message", "first event", "1"}, msg("second event"), msg(" third event")},
		Framing: &Framing{IDFields: 2}, Retry: -1},
	{Name: "spec: bare data lines, an event cut by the end", Rule: ruleExamples,
		Input: "data\n\ndata\ndata\n\ndata:", Want: []Event{msg(""), msg("\n")},
		Framing: &Framing{MultiLineEvents: 1}, Retry: -1},
	{Name: "spec: the space after the colon is optional", Rule: ruleExamples,
		Input: "data:test\n\ndata: test\n\n", Want: []Event{msg("test"), msg("test")}, Retry: -1},

	// web-platform-tests eventsource/format-*.
	{Name: "wpt format-bom: a BOM at the start, another mid-stream", Rule: ruleBOM,
		Input: "\xEF\xBB\xBFdata:1\n\n\xEF\xBB\xBFdata:2\n\ndata:3\n\n", Want: []Event{msg("1"), msg("3")},
		Framing: &Framing{BOMs: 1, NoDataBlocks: 1}, Retry: -1},
	{Name: "wpt format-bom-2: two BOMs at the start", Rule: ruleBOM,
		Input: "\xEF\xBB\xBF\xEF\xBB\xBFdata:1\n\ndata:2\n\ndata:3\n\n", Want: []Event{msg("2"), msg("3")},
		Framing: &Framing{BOMs: 1, NoDataBlocks: 1}, Retry: -1},
	{Name: "wpt format-comments", Rule: ruleComment,
		Input: "data:1\n:\n: comment\ndata:2\n::colons\n:data:x\n\n", Want: []Event{msg("1\n2")},
		Framing: &Framing{MultiLineEvents: 1}, Retry: -1},
	{Name: "wpt format-data-before-final-empty-line", Rule: ruleEOF,
		Input: "retry:1000\ndata:test1\n\nid:test\ndata:test2", Want: []Event{msg("test1")},
		Framing: &Framing{RetryFields: 1, IDFields: 1}, Retry: 1000},
	{Name: "wpt format-field-data", Rule: ruleData,
		Input: "data:\n\ndata\ndata\n\ndata:test\n\n", Want: []Event{msg(""), msg("\n"), msg("test")}, Retry: -1},
	{Name: "wpt format-field-event", Rule: ruleEvent,
		Input: "event:test\ndata:x\n\ndata:x\n\n", Want: []Event{{"test", "x", ""}, msg("x")}, Retry: -1},
	{Name: "wpt format-field-event-empty", Rule: ruleType,
		Input: "event: \ndata:data\n\n", Want: []Event{msg("data")}, Retry: -1},
	{Name: "wpt format-field-id: set, then emptied", Rule: ruleID,
		Input: "id:1\ndata:x\n\nid: \ndata:y\n\n", Want: []Event{{"message", "x", "1"}, msg("y")}, Retry: -1},
	{Name: "wpt format-field-id-2: the last id of an event wins and persists", Rule: ruleLastID,
		Input: "id:1\ndata:x\n\nid:2\nid:3\ndata:y\n\ndata:z\n\n",
		Want:  []Event{{"message", "x", "1"}, {"message", "y", "3"}, {"message", "z", "3"}}, LastID: "3", Retry: -1},
	{Name: "wpt format-field-id-null: an id with NUL is ignored", Rule: ruleID,
		Input: "id:1\n\nid:a\x00b\ndata:x\n\n", Want: []Event{{"message", "x", "1"}},
		Framing: &Framing{IDFields: 1, NoDataBlocks: 1}, LastID: "1", Retry: -1},
	{Name: "wpt format-field-parsing", Rule: ruleColon,
		Input: "data:\x00\ndata:  2\rData:1\ndata\x00:2\ndata:1\r\x00data:4\nda-ta:3\rdata_5\ndata:3\rdata:\r\n data:32\ndata:4\n\n",
		Want:  []Event{msg("\x00\n 2\n1\n3\n\n4")}, Framing: &Framing{MultiLineEvents: 1, BareCRLines: 4}, Retry: -1},
	{Name: "wpt format-field-retry: leading zeros", Rule: ruleRetry,
		Input: "retry:03000\ndata:x\n\n", Want: []Event{msg("x")}, Framing: &Framing{RetryFields: 1}, Retry: 3000},
	{Name: "wpt format-field-retry-bogus", Rule: ruleRetry,
		Input: "retry:3000\nretry:1000x\ndata:x\n\n", Want: []Event{msg("x")}, Framing: &Framing{RetryFields: 1}, Retry: 3000},
	{Name: "wpt format-field-retry-empty", Rule: ruleRetry,
		Input: "retry\ndata:x\n\n", Want: []Event{msg("x")}, Framing: &Framing{}, Retry: -1},
	{Name: "wpt format-field-unknown", Rule: ruleUnknown,
		Input: "data:test\n data\ndata\nfoobar:xxx\njustsometext\n:thisisacommentyay\ndata:test\n\n",
		Want:  []Event{msg("test\n\ntest")}, Retry: -1},
	{Name: "wpt format-leading-space: a tab stays, one space goes", Rule: ruleColon,
		Input: "data:\ttest\rdata: \ndata:test\n\n", Want: []Event{msg("\ttest\n\ntest")},
		Framing: &Framing{MultiLineEvents: 1, BareCRLines: 1}, Retry: -1},
	{Name: "wpt format-newlines: CRLF", Rule: ruleLines,
		Input: "data:test\r\ndata\ndata:test\r\n\r\n", Want: []Event{msg("test\n\ntest")}, Retry: -1},
	{Name: "wpt format-null-character", Rule: ruleData,
		Input: "data:\x00\n\n", Want: []Event{msg("\x00")}, Retry: -1},
	{Name: "wpt format-utf-8", Rule: ruleUTF8,
		Input: "data:ok\xE2\x80\xA6\n\n", Want: []Event{msg("ok…")}, Framing: &Framing{}, Retry: -1},
	{Name: "wpt lines and data parsing", Rule: ruleData,
		Input: "data:msg\ndata:msg\n\n:\n\ndata:\n\ndata:end\n\n", Want: []Event{msg("msg\nmsg"), msg(""), msg("end")}, Retry: -1},

	// The eventsource-parser test suite.
	{Name: "esp basic, a named last event", Rule: ruleType,
		Input: "data: 0\n\ndata: 1\n\nevent: done\ndata: ✔\n\n", Want: []Event{msg("0"), msg("1"), {"done", "✔", ""}}, Retry: -1},
	{Name: "esp multi-line data with a type", Rule: ruleData,
		Input: "event: stock\ndata: YHOO\ndata: +2\ndata: 10\n\nevent: stock\ndata: GOOG\ndata: -8\ndata: 1881\n\n",
		Want:  []Event{{"stock", "YHOO\n+2\n10", ""}, {"stock", "GOOG\n-8\n1881", ""}}, Framing: &Framing{MultiLineEvents: 2}, Retry: -1},
	{Name: "esp CRLF lines of one event", Rule: ruleLines,
		Input: "data: A\r\ndata: B\r\ndata: C\r\n\n", Want: []Event{msg("A\nB\nC")}, Retry: -1},
	{Name: "esp leading BOM", Rule: ruleBOM,
		Input: "\xEF\xBB\xBFdata: bomful 1\n\ndata: bomless 2\n\nevent: done\ndata: ✔\n\n",
		Want:  []Event{msg("bomful 1"), msg("bomless 2"), {"done", "✔", ""}}, Framing: &Framing{BOMs: 1}, Retry: -1},
	{Name: "esp BOMs in several places", Rule: ruleBOM,
		Input: "\xEF\xBB\xBFdata: bomful 1\n\n\xEF\xBB\xBFdata: bomful 2\n\ndata: bomless 3\n\n",
		Want:  []Event{msg("bomful 1"), msg("bomless 3")}, Framing: &Framing{BOMs: 1, NoDataBlocks: 1}, Retry: -1},
	{Name: "esp carriage returns", Rule: ruleLines,
		Input: "data: dog\rdata: bark\r\rdata: cat\rdata: meow\r\r", Want: []Event{msg("dog\nbark"), msg("cat\nmeow")},
		Framing: &Framing{MultiLineEvents: 2, BareCRLines: 5}, Retry: -1},
	{Name: "esp CRLF line endings", Rule: ruleLines,
		Input: "data: sheep\r\ndata: bleat\r\n\r\ndata: pig\r\ndata: oink\r\n\r\n", Want: []Event{msg("sheep\nbleat"), msg("pig\noink")}, Retry: -1},
	{Name: "esp odd uses of comments", Rule: ruleComment,
		Input: ": hello\n\ndata: First\n\n:\ndata: Second\n\n:comment\n\ndata: Third\n:comment\n\n:\n:\ndata: Fourth\n\n",
		Want:  []Event{msg("First"), msg("Second"), msg("Third"), msg("Fourth")}, Framing: &Framing{}, Retry: -1},
	{Name: "esp comments, no blank line at the end", Rule: ruleEOF,
		Input: "data:1\n\n:\ndata:2\n\n: x\ndata:3\n\ndata:4", Want: []Event{msg("1"), msg("2"), msg("3")}, Retry: -1},
	{Name: "esp empty event field", Rule: ruleType,
		Input: "event:\ndata: Hello 1\n\nevent: done\ndata: ✔\n\n", Want: []Event{msg("Hello 1"), {"done", "✔", ""}}, Retry: -1},
	{Name: "esp empty retry field", Rule: ruleRetry,
		Input: "retry: 500\n\nid: 1\ndata: 🥌\n\nretry:\nid: 2\ndata: 🧹\n\n",
		Want:  []Event{{"message", "🥌", "1"}, {"message", "🧹", "2"}}, Framing: &Framing{RetryFields: 1, IDFields: 2, NoDataBlocks: 1},
		Retry: 500, LastID: "2"},
	{Name: "esp retry with letters", Rule: ruleRetry,
		Input: "retry: 500\n\ndata: first\n\nretry: 50x\n\ndata: second\n\n", Want: []Event{msg("first"), msg("second")},
		Framing: &Framing{RetryFields: 1, NoDataBlocks: 2}, Retry: 500},
	{Name: "esp id with NUL keeps the previous id", Rule: ruleID,
		Input: "id: 123\nid: bad\x00id\ndata: hello\n\n", Want: []Event{{"message", "hello", "123"}}, LastID: "123", Retry: -1},
	{Name: "esp id in a block without data", Rule: ruleLastID,
		Input: "id: 42\n\ndata: x\n\n", Want: []Event{{"message", "x", "42"}}, Framing: &Framing{IDFields: 1, NoDataBlocks: 1},
		LastID: "42", Retry: -1},
	{Name: "esp unknown fields between data lines", Rule: ruleUnknown,
		Input: "data: abc\nfoo: bar\ndata\ndata: 123\n\n", Want: []Event{msg("abc\n\n123")}, Retry: -1},
	{Name: "esp blank CR line, its CRLF after the data's CR", Rule: ruleLines,
		Input: "data: one\r\r\n", Want: []Event{msg("one")}, Framing: &Framing{BareCRLines: 1}, Retry: -1},
	{Name: "esp bare data line ended by CRLF", Rule: ruleNoColon,
		Input: "data: one\ndata\r\ndata: two\n\n", Want: []Event{msg("one\n\ntwo")}, Retry: -1},
	{Name: "esp comment ended by CRLF between data lines", Rule: ruleComment,
		Input: "data: one\n:ignored\r\ndata: two\n\n", Want: []Event{msg("one\ntwo")}, Retry: -1},
	{Name: "esp comment ended by a bare CR", Rule: ruleComment,
		Input: "data: one\n:ignored\rdata: two\n\n", Want: []Event{msg("one\ntwo")}, Framing: &Framing{MultiLineEvents: 1, BareCRLines: 1}, Retry: -1},
	{Name: "esp unknown line then an event", Rule: ruleUnknown,
		Input: "garbage\rdata: ok\n\n", Want: []Event{msg("ok")}, Framing: &Framing{BareCRLines: 1}, Retry: -1},
	{Name: "esp multi-byte text", Rule: ruleUTF8,
		Input: "data: 我現在都看實況不玩遊戲\n\nevent: done\ndata: ✔\n\n", Want: []Event{msg("我現在都看實況不玩遊戲"), {"done", "✔", ""}}, Retry: -1},

	// Issue 27's cases.
	{Name: "issue: BOM before the first event", Rule: ruleBOM,
		Input: "\xEF\xBB\xBFdata:1\n\ndata:2\n\n", Want: []Event{msg("1"), msg("2")}, Framing: &Framing{BOMs: 1}, Retry: -1},
	{Name: "issue: BOM before a named event, CRLF", Rule: ruleBOM,
		Input: "\xEF\xBB\xBFevent: e\r\ndata: x\r\n\r\n", Want: []Event{{"e", "x", ""}}, Framing: &Framing{BOMs: 1}, Retry: -1},
	{Name: "issue: an event without its blank line is not dispatched", Rule: ruleEOF,
		Input: "data: a\n\ndata: b\n", Want: []Event{msg("a")}, Retry: -1},
	{Name: "issue: event field after data", Rule: ruleEvent,
		Input: "data: x\nevent: late\n\n", Want: []Event{{"late", "x", ""}}, Retry: -1},
	{Name: "issue: only one leading space is removed", Rule: ruleColon,
		Input: "data:  two\n\ndata:\ttab\n\ndata: \t mixed\n\n", Want: []Event{msg(" two"), msg("\ttab"), msg("\t mixed")}, Retry: -1},
	{Name: "issue: a bare event line resets the type", Rule: ruleNoColon,
		Input: "event: add\nevent\ndata: x\n\n", Want: []Event{msg("x")}, Retry: -1},
	{Name: "issue: invalid UTF-8 becomes U+FFFD", Rule: ruleUTF8,
		Input: "data: a\xFFb\n\n", Want: []Event{msg("a\uFFFDb")}, Framing: &Framing{InvalidUTF8: 1}, Retry: -1},
	{Name: "issue: JSON split over two data lines", Rule: ruleData,
		Input: "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\ndata: \"pi_ts\":1}\n\ndata: [DONE]\n\n",
		Want:  []Event{msg("{\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\n\"pi_ts\":1}"), msg("[DONE]")}, Framing: &Framing{MultiLineEvents: 1}, Retry: -1},

	// The rules.
	{Name: "rule: truncated 3-byte sequence is one U+FFFD", Rule: ruleUTF8,
		Input: "data: \xE2\x82x\n\n", Want: []Event{msg("\uFFFDx")}, Framing: &Framing{InvalidUTF8: 1}, Retry: -1},
	{Name: "rule: F0 80 80 is three errors", Rule: ruleUTF8,
		Input: "data: \xF0\x80\x80\n\n", Want: []Event{msg("\uFFFD\uFFFD\uFFFD")}, Framing: &Framing{InvalidUTF8: 3}, Retry: -1},
	{Name: "rule: an encoded surrogate is three errors", Rule: ruleUTF8,
		Input: "data: \xED\xA0\x80\n\n", Want: []Event{msg("\uFFFD\uFFFD\uFFFD")}, Framing: &Framing{InvalidUTF8: 3}, Retry: -1},
	{Name: "rule: an overlong encoding is two errors", Rule: ruleUTF8,
		Input: "data: \xC0\xAF\n\n", Want: []Event{msg("\uFFFD\uFFFD")}, Framing: &Framing{InvalidUTF8: 2}, Retry: -1},
	{Name: "rule: past U+10FFFF is four errors", Rule: ruleUTF8,
		Input: "data: \xF4\x90\x80\x80\n\n", Want: []Event{msg("\uFFFD\uFFFD\uFFFD\uFFFD")}, Framing: &Framing{InvalidUTF8: 4}, Retry: -1},
	{Name: "rule: a sequence cut by the line end", Rule: ruleUTF8,
		Input: "data: \xF0\x9F\x98\ndata: x\n\n", Want: []Event{msg("\uFFFD\nx")}, Framing: &Framing{InvalidUTF8: 1, MultiLineEvents: 1}, Retry: -1},
	{Name: "rule: a U+FFFD in the stream is no error", Rule: ruleUTF8,
		Input: "data: \xEF\xBF\xBD\n\n", Want: []Event{msg("\uFFFD")}, Framing: &Framing{}, Retry: -1},
	{Name: "rule: invalid UTF-8 in the type and in a comment", Rule: ruleUTF8,
		Input: ": \xFF\nevent: a\xC3\ndata: x\n\n", Want: []Event{{"a\uFFFD", "x", ""}}, Framing: &Framing{InvalidUTF8: 2}, Retry: -1},
	{Name: "rule: a BOM inside data is data", Rule: ruleBOM,
		Input: "data: a\xEF\xBB\xBFb\n\n", Want: []Event{msg("a\uFEFFb")}, Framing: &Framing{}, Retry: -1},
	{Name: "rule: the start of a BOM then data", Rule: ruleUTF8,
		Input: "\xEF\xBBdata: x\n\ndata: y\n\n", Want: []Event{msg("y")}, Framing: &Framing{InvalidUTF8: 1, NoDataBlocks: 1}, Retry: -1},
	{Name: "rule: a BOM's lead byte then data", Rule: ruleUTF8,
		Input: "\xEFdata: x\n\ndata: y\n\n", Want: []Event{msg("y")}, Framing: &Framing{InvalidUTF8: 1, NoDataBlocks: 1}, Retry: -1},
	{Name: "rule: a BOM alone then a line end", Rule: ruleBOM,
		Input: "\xEF\xBB\xBF\ndata: y\n\n", Want: []Event{msg("y")}, Framing: &Framing{BOMs: 1}, Retry: -1},
	{Name: "rule: a named event cut by the end", Rule: ruleEOF,
		Input: "event: x\ndata: y", Want: nil, Retry: -1},
	{Name: "rule: CR-only stream", Rule: ruleLines,
		Input: "data: a\rdata: b\r\rdata: c\r\r", Want: []Event{msg("a\nb"), msg("c")}, Framing: &Framing{MultiLineEvents: 1, BareCRLines: 4}, Retry: -1},
	{Name: "rule: CRLF, CR and LF in one event", Rule: ruleLines,
		Input: "data: a\r\ndata: b\rdata: c\n\r\n", Want: []Event{msg("a\nb\nc")}, Framing: &Framing{MultiLineEvents: 1, BareCRLines: 1}, Retry: -1},
	{Name: "rule: blank lines before the first event", Rule: ruleEmpty,
		Input: "\n\n\r\ndata: x\n\n\n\n", Want: []Event{msg("x")}, Framing: &Framing{}, Retry: -1},
	{Name: "rule: a space before the colon makes another field", Rule: ruleUnknown,
		Input: "data : x\n\n", Want: nil, Framing: &Framing{NoDataBlocks: 1}, Retry: -1},
	{Name: "rule: field names are case-sensitive", Rule: ruleUnknown,
		Input: "DATA: x\nEvent: y\n\n", Want: nil, Framing: &Framing{NoDataBlocks: 1}, Retry: -1},
	{Name: "rule: colons in the value", Rule: ruleColon,
		Input: "data: a:b: c\n\ndata::x\n\n", Want: []Event{msg("a:b: c"), msg(":x")}, Retry: -1},
	{Name: "rule: the type lasts one event", Rule: ruleReset,
		Input: "event: a\ndata: 1\n\ndata: 2\n\n", Want: []Event{{"a", "1", ""}, msg("2")}, Retry: -1},
	{Name: "rule: a block without data empties the type", Rule: ruleEmpty,
		Input: "event: a\n\ndata: 2\n\n", Want: []Event{msg("2")}, Framing: &Framing{NoDataBlocks: 1}, Retry: -1},
	{Name: "rule: an empty last data line leaves one LF", Rule: ruleTrimLF,
		Input: "data: a\ndata:\n\n", Want: []Event{msg("a\n")}, Framing: &Framing{MultiLineEvents: 1}, Retry: -1},
	{Name: "rule: a retry past int64 saturates", Rule: ruleRetry,
		Input: "retry: 99999999999999999999999\ndata: x\n\n", Want: []Event{msg("x")}, Retry: math.MaxInt64},
	{Name: "rule: retry with two spaces or a sign is ignored", Rule: ruleRetry,
		Input: "retry: 70\nretry:  1000\nretry: -1\nretry: +5\ndata: x\n\n", Want: []Event{msg("x")}, Framing: &Framing{RetryFields: 1}, Retry: 70},
	{Name: "rule: a bare id empties the ID", Rule: ruleID,
		Input: "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", Want: []Event{{"message", "a", "7"}, {"message", "b", "7"}, msg("c")}, Retry: -1},
	{Name: "rule: an id without its blank line is not the last event ID", Rule: ruleLastID,
		Input: "id: 1\ndata: a\n\nid: 2\ndata: b", Want: []Event{{"message", "a", "1"}}, LastID: "1", Retry: -1},
	{Name: "rule: comments alone dispatch nothing", Rule: ruleComment,
		Input: ": a\n: b\n\n:c\r\n\r\n", Want: nil, Framing: &Framing{}, Retry: -1},
	{Name: "rule: a line of one space is an unknown field", Rule: ruleNoColon,
		Input: " \n\ndata: x\n\n", Want: []Event{msg("x")}, Framing: &Framing{NoDataBlocks: 1}, Retry: -1},
	{Name: "rule: a spaced event type is kept", Rule: ruleEvent,
		Input: "event:  spaced \ndata: x\n\n", Want: []Event{{" spaced ", "x", ""}}, Retry: -1},
	{Name: "rule: a CR ending the stream ends the event", Rule: ruleLines,
		Input: "data: x\n\r", Want: []Event{msg("x")}, Framing: &Framing{}, Retry: -1},
	{Name: "rule: Anthropic's stream shape", Rule: ruleEvent,
		Input: "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		Want:  []Event{{"message_start", `{"type":"message_start"}`, ""}, {"ping", `{"type": "ping"}`, ""}, {"message_stop", `{"type":"message_stop"}`, ""}}, Retry: -1},
	{Name: "rule: a long event of many data lines", Rule: ruleData,
		Input: strings.Repeat("data: "+strings.Repeat("x", 1000)+"\n", 300) + "\n",
		Want:  []Event{msg(strings.TrimSuffix(strings.Repeat(strings.Repeat("x", 1000)+"\n", 300), "\n"))}, Framing: &Framing{MultiLineEvents: 1}, Retry: -1},
}

// A plain transcription of the WHATWG algorithms an event stream is read
// by, written for clarity and not speed, to check EventReader against:
// the Encoding Standard's "UTF-8 decode" (BOM sniffing, then its UTF-8
// decoder in replacement mode) over the whole stream, then the HTML
// specification's "Interpreting an event stream" over the decoded text.
// It shares no code with wire.EventReader.

// RefEvent is one event the reference dispatches; At is how many bytes
// of the stream had to arrive for it to be dispatched (through the first
// character of the line ending of its blank line).
type RefEvent struct {
	Event
	At int
}

// Result is everything the reference finds in a stream.
type Result struct {
	Events   []RefEvent
	Retry    int64  // the reconnection time, -1 when no retry field set it
	LastID   string // the last event ID string: the ID buffer at the last blank line
	Comments int
	Framing  Framing
}

// Evs returns the events of r as the cases write them.
func (r Result) Evs() []Event {
	var out []Event
	for _, e := range r.Events {
		out = append(out, e.Event)
	}
	return out
}

// refRune is one decoded character; end is the offset in the stream just
// after the bytes that produced it, bad that it replaced an error.
type refRune struct {
	r   rune
	end int
	bad bool
}

// refDecode is the Encoding Standard's "UTF-8 decode" of b: a leading
// byte order mark is skipped, then the UTF-8 decoder runs (decodeFrom).
func refDecode(b []byte) (out []refRune, bom bool) {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return decodeFrom(b, 3), true
	}
	return decodeFrom(b, 0), false
}

// DecodeUTF8 is the Encoding Standard's UTF-8 decoder over b, a byte
// order mark included (as in the middle of a stream): each error becomes
// U+FFFD.
func DecodeUTF8(b []byte) string {
	var sb strings.Builder
	for _, r := range decodeFrom(b, 0) {
		sb.WriteRune(r.r)
	}
	return sb.String()
}

// decodeFrom runs the Encoding Standard's UTF-8 decoder over b from
// offset i, in replacement mode: an error emits U+FFFD, and the byte that
// revealed it (when not the lead byte) is processed again.
func decodeFrom(b []byte, i int) (out []refRune) {
	var cp rune
	needed, seen := 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	for i <= len(b) {
		if i == len(b) { // end of stream
			if needed != 0 {
				out = append(out, refRune{0xFFFD, i, true})
			}
			break
		}
		c := b[i]
		if needed == 0 {
			i++
			switch {
			case c <= 0x7F:
				out = append(out, refRune{rune(c), i, false})
			case c >= 0xC2 && c <= 0xDF:
				needed, cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				}
				if c == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, rune(c&0xF)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				}
				if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(c&0x7)
			default:
				out = append(out, refRune{0xFFFD, i, true})
			}
			continue
		}
		if c < lower || c > upper {
			// Restore the byte to the stream: it is read again.
			cp, needed, seen, lower, upper = 0, 0, 0, 0x80, 0xBF
			out = append(out, refRune{0xFFFD, i, true})
			continue
		}
		i++
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(c&0x3F)
		if seen++; seen == needed {
			out = append(out, refRune{cp, i, false})
			cp, needed, seen = 0, 0, 0
		}
	}
	return out
}

// refLine is one line of the decoded stream and the offset just after the
// first character of its line ending.
type refLine struct {
	runes []refRune
	at    int
}

// refLines splits the decoded stream into lines ending in CRLF, LF or CR.
// The unterminated tail is not a line. A CR is counted bare when a
// character follows it and is not LF.
func refLines(rs []refRune) (lines []refLine, bareCR int) {
	start := 0
	for i := 0; i < len(rs); i++ {
		switch rs[i].r {
		case '\n':
			lines = append(lines, refLine{rs[start:i], rs[i].end})
			start = i + 1
		case '\r':
			lines = append(lines, refLine{rs[start:i], rs[i].end})
			if i+1 < len(rs) && rs[i+1].r == '\n' {
				i++
			} else if i+1 < len(rs) {
				bareCR++
			}
			start = i + 1
		}
	}
	return lines, bareCR
}

// Interpret reads stream as the specification says.
func Interpret(stream []byte) Result {
	res := Result{Retry: -1}
	rs, bom := refDecode(stream)
	if bom {
		res.Framing.BOMs = 1
	}
	lines, bareCR := refLines(rs)
	res.Framing.BareCRLines = bareCR
	var data, eventType, lastID strings.Builder // the specification's buffers
	dataLines, fields := 0, false
	for _, l := range lines {
		var sb strings.Builder
		for _, r := range l.runes {
			sb.WriteRune(r.r)
			if r.bad {
				res.Framing.InvalidUTF8++
			}
		}
		line := sb.String()
		switch {
		case line == "": // dispatch the event
			res.LastID = lastID.String() // the source's last event ID string
			if dataLines == 0 {
				if fields {
					res.Framing.NoDataBlocks++
				}
				eventType.Reset()
				fields = false
				continue
			}
			if dataLines > 1 {
				res.Framing.MultiLineEvents++
			}
			d := data.String()
			d = strings.TrimSuffix(d, "\n")
			typ := eventType.String()
			if typ == "" {
				typ = "message"
			}
			res.Events = append(res.Events, RefEvent{Event{typ, d, res.LastID}, l.at})
			data.Reset()
			eventType.Reset()
			dataLines, fields = 0, false
			continue
		case strings.HasPrefix(line, ":"):
			res.Comments++
			continue
		}
		name, value := line, ""
		if i := strings.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			value = strings.TrimPrefix(value, " ")
		}
		fields = true
		switch name {
		case "event":
			eventType.Reset()
			eventType.WriteString(value)
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			dataLines++
		case "id":
			if !strings.ContainsRune(value, 0) {
				lastID.Reset()
				lastID.WriteString(value)
				res.Framing.IDFields++
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				var n int64
				for _, c := range value {
					if n > (1<<63-1-9)/10 {
						n = 1<<63 - 1
					} else {
						n = n*10 + int64(c-'0')
					}
				}
				res.Retry = n
				res.Framing.RetryFields++
			}
		}
	}
	return res
}

// Chunkings calls f with input cut in the ways the conformance cases are
// read: whole, one byte at a time, at every 2-way split (inputs of up to
// 256 bytes), at every 3-way split (up to 48), and 20 random cuts into
// 2 to 9 pieces (seeded by seed, the same every run).
func Chunkings(input []byte, seed uint64, f func(desc string, pieces [][]byte)) {
	f("whole", [][]byte{input})
	bytewise := make([][]byte, len(input))
	for i := range input {
		bytewise[i] = input[i : i+1]
	}
	f("one byte at a time", bytewise)
	if len(input) <= 256 {
		for i := 1; i < len(input); i++ {
			f(fmt.Sprintf("split at %d", i), [][]byte{input[:i], input[i:]})
		}
	}
	if len(input) <= 48 {
		for i := 1; i < len(input); i++ {
			for j := i + 1; j < len(input); j++ {
				f(fmt.Sprintf("split at %d, %d", i, j), [][]byte{input[:i], input[i:j], input[j:]})
			}
		}
	}
	rng := rand.New(rand.NewPCG(27, seed))
	for range 20 {
		cuts := []int{0, len(input)}
		for range 1 + rng.IntN(8) {
			cuts = append(cuts, rng.IntN(len(input)+1))
		}
		slices.Sort(cuts)
		var pieces [][]byte
		for k := 1; k < len(cuts); k++ {
			pieces = append(pieces, input[cuts[k-1]:cuts[k]])
		}
		f(fmt.Sprintf("cut at %v", cuts[1:len(cuts)-1]), pieces)
	}
}

// DispatchPieces returns, for each of the reference's events, the piece
// whose bytes complete it.
func DispatchPieces(pieces [][]byte, ref Result) []int {
	var out []int
	end, k := 0, 0
	for _, e := range ref.Events {
		for ; k < len(pieces); k++ {
			if end+len(pieces[k]) >= e.At {
				break
			}
			end += len(pieces[k])
		}
		out = append(out, k)
	}
	return out
}
