package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// wsMsg is a message as a test compares it.
type wsMsg struct {
	Op      byte
	Payload string
}

// readWS feeds in to a fresh reader (masked: a server reading a client)
// in pieces of at most step bytes (0: all at once) and returns the
// messages and the error it ended with.
func readWS(in []byte, masked bool, max, step int) ([]wsMsg, error) {
	r := &WSReader{Masked: masked, MaxMessage: max}
	var out []wsMsg
	for len(in) > 0 {
		n := len(in)
		if step > 0 {
			n = min(step, n)
		}
		p := in[:n]
		in = in[n:]
		for len(p) > 0 {
			m, used, err := r.Next(p)
			if err != nil {
				return out, err
			}
			if used < 0 || used > len(p) {
				panic(fmt.Sprintf("Next used %d of %d bytes", used, len(p)))
			}
			p = p[used:]
			if m.Op == 0 {
				if len(p) != 0 {
					panic("Next returned no message with bytes left")
				}
				break
			}
			out = append(out, wsMsg{m.Op, string(m.Payload)})
		}
	}
	return out, nil
}

var testKey = [4]byte{0x37, 0xfa, 0x21, 0x3d}

// frame builds one frame by hand: b0 is FIN|RSV|opcode, then the payload
// length and, with key, the masking key and the masked payload.
func frame(b0 byte, payload string, key *[4]byte) []byte {
	out := AppendWSHeader(nil, 0, len(payload), key)
	out[0] = b0
	at := len(out)
	out = append(out, payload...)
	if key != nil {
		MaskWS(out[at:], *key)
	}
	return out
}

func TestWSRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 127, 1000, 0xffff, 0x10000, 70000} {
		payload := strings.Repeat("abcdefghij", n/10+1)[:n]
		for _, masked := range []bool{false, true} {
			var key *[4]byte
			if masked {
				key = &testKey
			}
			in := AppendWSFrame(nil, WSText, []byte(payload), key)
			steps := []int{0, 1, 7, 4096}
			if n > 1000 {
				steps = []int{0, 4096}
			}
			for _, step := range steps {
				got, err := readWS(in, masked, 0, step)
				if err != nil || len(got) != 1 || got[0] != (wsMsg{WSText, payload}) {
					t.Errorf("%d-byte text (masked %v) fed %d at a time: got %d messages, %v", n, masked, step, len(got), err)
				}
			}
		}
	}
}

func TestWSHeaderLengths(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want int // header bytes without a key
	}{{0, 2}, {125, 2}, {126, 4}, {0xffff, 4}, {0x10000, 10}} {
		if got := len(AppendWSHeader(nil, WSText, tt.n, nil)); got != tt.want {
			t.Errorf("AppendWSHeader(%d bytes) is %d bytes, want %d", tt.n, got, tt.want)
		}
		if got := len(AppendWSHeader(nil, WSText, tt.n, &testKey)); got != tt.want+4 {
			t.Errorf("AppendWSHeader(%d bytes, masked) is %d bytes, want %d", tt.n, got, tt.want+4)
		}
	}
}

// TestWSFragments reassembles a message of three frames with control
// frames between them, split at every byte.
func TestWSFragments(t *testing.T) {
	var in []byte
	in = append(in, frame(byte(WSText), "Hel", &testKey)...)          // not FIN
	in = append(in, frame(0x80|WSPing, "p1", &testKey)...)            // control inside the message
	in = append(in, frame(byte(WSContinuation), "lo, ", &testKey)...) // not FIN
	in = append(in, frame(0x80|WSPong, "", &testKey)...)              //
	in = append(in, frame(0x80|WSContinuation, "wörld", &testKey)...) // FIN
	in = append(in, AppendWSFrame(nil, WSBinary, []byte{0, 1, 2}, &testKey)...)
	in = append(in, AppendWSClose(nil, WSCloseNormal, "bye", &testKey)...)
	want := []wsMsg{{WSPing, "p1"}, {WSPong, ""}, {WSText, "Hello, wörld"}, {WSBinary, "\x00\x01\x02"}, {WSClose, "\x03\xe8bye"}}
	for step := range len(in) + 1 {
		got, err := readWS(in, true, 0, step)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("fed %d bytes at a time: %v, %v; want %v", step, got, err, want)
		}
	}
}

func TestWSPartial(t *testing.T) {
	in := AppendWSFrame(nil, WSText, []byte("hello"), nil)
	var r WSReader
	if r.Partial() {
		t.Fatal("a new reader is Partial")
	}
	for i := 1; i < len(in); i++ {
		r = WSReader{}
		if m, _, err := r.Next(in[:i]); m.Op != 0 || err != nil || !r.Partial() {
			t.Fatalf("after %d of %d bytes: message %v, %v, Partial %v; want none, nil, true", i, len(in), m, err, r.Partial())
		}
	}
	r = WSReader{}
	r.Next(frame(byte(WSText), "a", nil)) // a first fragment
	if !r.Partial() {
		t.Error("a reader inside a fragmented message is not Partial")
	}
	r = WSReader{}
	if m, _, _ := r.Next(in); m.Op != WSText || r.Partial() {
		t.Errorf("after a whole message: %v, Partial %v", m, r.Partial())
	}
}

// TestWSNoCopy: the payload of one unmasked frame that arrived whole is
// the caller's bytes.
func TestWSNoCopy(t *testing.T) {
	in := AppendWSFrame(nil, WSText, []byte(`{"type":"x"}`), nil)
	var r WSReader
	m, _, _ := r.Next(in)
	if &m.Payload[0] != &in[2] {
		t.Error("the payload of a whole unmasked frame was copied")
	}
}

func TestWSErrors(t *testing.T) {
	big := func(n uint64) []byte { // a text header declaring n bytes, 64-bit form
		h := []byte{0x81, 127, 0, 0, 0, 0, 0, 0, 0, 0}
		for i := range 8 {
			h[9-i] = byte(n >> (8 * i))
		}
		return h
	}
	tests := []struct {
		name   string
		in     []byte
		masked bool
		max    int
		want   error
		text   string // in the error
	}{
		{"reserved bit", frame(0xC1, "x", nil), false, 0, ErrWSProtocol, "reserved bits"},
		{"unknown opcode", frame(0x83, "x", nil), false, 0, ErrWSProtocol, "unknown opcode 0x3"},
		{"fragmented ping", frame(byte(WSPing), "x", nil), false, 0, ErrWSProtocol, "fragmented control frame"},
		{"long ping", frame(0x80|WSPing, strings.Repeat("x", 126), nil), false, 0, ErrWSProtocol, "126 bytes"},
		{"masked from the server", frame(0x81, "x", &testKey), false, 0, ErrWSProtocol, "masked frame from the server"},
		{"unmasked from the client", frame(0x81, "x", nil), true, 0, ErrWSProtocol, "unmasked frame from the client"},
		{"lone continuation", frame(0x80, "x", nil), false, 0, ErrWSProtocol, "continuation frame without"},
		{"text inside a message", append(frame(0x01, "a", nil), frame(0x81, "b", nil)...), false, 0, ErrWSProtocol, "inside a fragmented"},
		{"length top bit", big(1 << 63), false, 0, ErrWSProtocol, "most significant bit"},
		{"too large, declared", big(1 << 40), false, 0, ErrWSTooLarge, "more than 1048576 bytes"},
		{"too large, over frames", append(frame(0x01, "abc", nil), frame(0x80, "de", nil)...), false, 4, ErrWSTooLarge, "more than 4 bytes"},
		{"bad UTF-8 text", frame(0x81, "a\xffb", nil), false, 0, ErrWSBadUTF8, ""},
		{"close of one byte", frame(0x88, "\x03", nil), false, 0, ErrWSProtocol, "1-byte"},
		{"close code 1005", frame(0x88, "\x03\xed", nil), false, 0, ErrWSProtocol, "close code 1005"},
		{"close code 999", frame(0x88, "\x03\xe7", nil), false, 0, ErrWSProtocol, "close code 999"},
		{"close reason not UTF-8", frame(0x88, "\x03\xe8\xff", nil), false, 0, ErrWSBadUTF8, "close reason"},
	}
	for _, tt := range tests {
		for _, step := range []int{0, 1} {
			_, err := readWS(tt.in, tt.masked, tt.max, step)
			if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.text) {
				t.Errorf("%s (fed %d at a time): err %v, want %v containing %q", tt.name, step, err, tt.want, tt.text)
			}
		}
		// The error is sticky.
		r := &WSReader{Masked: tt.masked, MaxMessage: tt.max}
		var err error
		for p := tt.in; len(p) > 0 && err == nil; {
			var used int
			_, used, err = r.Next(p)
			p = p[used:]
		}
		if _, _, again := r.Next([]byte{0x81, 0}); !errors.Is(again, tt.want) {
			t.Errorf("%s: after the error, Next returned %v", tt.name, again)
		}
	}
}

// TestWSTooLargeEarly: a message declared too large fails at its header,
// before its payload arrives.
func TestWSTooLargeEarly(t *testing.T) {
	r := &WSReader{MaxMessage: 10}
	_, used, err := r.Next(AppendWSHeader(nil, WSText, 11, nil))
	if !errors.Is(err, ErrWSTooLarge) || used != 0 {
		t.Errorf("header of an 11-byte message, limit 10: used %d, %v", used, err)
	}
}

func TestWSClose(t *testing.T) {
	f := AppendWSClose(nil, WSCloseGoingAway, "server going away", nil)
	got, err := readWS(f, false, 0, 0)
	if err != nil || len(got) != 1 || got[0].Op != WSClose {
		t.Fatalf("close frame read back as %v, %v", got, err)
	}
	if code, reason := ParseWSClose([]byte(got[0].Payload)); code != 1001 || reason != "server going away" {
		t.Errorf("ParseWSClose = %d %q", code, reason)
	}
	if code, reason := ParseWSClose(nil); code != WSCloseNoStatus || reason != "" {
		t.Errorf("ParseWSClose(empty) = %d %q, want 1005", code, reason)
	}
	// A long reason is cut to fit, at a character boundary.
	long := AppendWSClose(nil, WSCloseNormal, strings.Repeat("é", 100), nil)
	if got, err := readWS(long, false, 0, 0); err != nil || len(got[0].Payload) > MaxWSControlPayload {
		t.Errorf("close with a long reason: %v, %d-byte payload", err, len(got[0].Payload))
	}
	for _, tt := range []struct {
		p    string
		want string
	}{
		{"", "close without a status code"},
		{"\x03\xe9", "close 1001"},
		{"\x03\xf3boom", `close 1011 "boom"`},
	} {
		if got := WSCloseText([]byte(tt.p)); got != tt.want {
			t.Errorf("WSCloseText(%q) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestWSCloseCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: x", ErrWSTooLarge), 1009},
		{ErrWSBadUTF8, 1007},
		{fmt.Errorf("%w: x", ErrWSProtocol), 1002},
	} {
		if got := WSCloseCode(tt.err); got != tt.want {
			t.Errorf("WSCloseCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestWSAccept(t *testing.T) {
	// The example of RFC 6455 §1.3.
	if got := WSAccept("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Errorf("WSAccept = %q", got)
	}
	for _, tt := range []struct {
		key  string
		want bool
	}{
		{"dGhlIHNhbXBsZSBub25jZQ==", true},
		{"dGhlIHNhbXBsZSBub25jZQ", false}, // no padding
		{"c2hvcnQ=", false},               // 5 bytes
		{"", false},
		{"!!!!!!!!!!!!!!!!!!!!!!==", false},
	} {
		if got := ValidWSKey(tt.key); got != tt.want {
			t.Errorf("ValidWSKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestHasFieldToken(t *testing.T) {
	fields := []Field{{"Connection", "keep-alive"}, {"connection", "Upgrade"}, {"Upgrade", "WebSocket"}}
	for _, tt := range []struct {
		name, token string
		want        bool
	}{
		{"Connection", "upgrade", true},
		{"CONNECTION", "keep-alive", true},
		{"Upgrade", "websocket", true},
		{"Upgrade", "h2c", false},
		{"Host", "upgrade", false},
	} {
		if got := HasFieldToken(fields, tt.name, tt.token); got != tt.want {
			t.Errorf("HasFieldToken(%s, %s) = %v, want %v", tt.name, tt.token, got, tt.want)
		}
	}
}

func BenchmarkWSReader(b *testing.B) {
	payload := []byte(`{"type":"response.output_text.delta","sequence_number":17,"item_id":"msg_sselatency_1","output_index":0,"content_index":0,"delta":"anan","logprobs":[],"pi_ts":1700000000000000000}`)
	in := AppendWSFrame(nil, WSText, payload, nil)
	var r WSReader
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		m, _, err := r.Next(in)
		if err != nil || !bytes.Equal(m.Payload, payload) {
			b.Fatal(m, err)
		}
	}
}
