package wire

import (
	"errors"
	"fmt"
	"testing"
	"unicode/utf8"
)

// wsErrClass maps a WSReader error to its sentinel, nil to nil and any
// other error to errUnnamed.
func wsErrClass(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{ErrWSProtocol, ErrWSTooLarge, ErrWSBadUTF8} {
		if errors.Is(err, e) {
			return e
		}
	}
	return errUnnamed
}

var errUnnamed = errors.New("an error none of the named ones")

// FuzzWSReader feeds arbitrary bytes to WSReader, in both directions and
// with a small message bound, whole and split at split: both feedings give
// the same messages and the same error class; every message respects the
// limits (a data message within the bound, a text one UTF-8, a control
// frame within 125 bytes); and the messages, framed again by
// AppendWSFrame (masked for the server's reader), read back the same.
func FuzzWSReader(f *testing.F) {
	f.Add(AppendWSFrame(nil, WSText, []byte(`{"type":"response.output_text.delta","delta":"anan","pi_ts":1}`), nil), false, 7)
	f.Add(AppendWSFrame(nil, WSText, []byte(`{"type":"response.create","model":"m","input":"hi"}`), &testKey), true, 3)
	f.Add(append(frame(byte(WSText), "Hel", nil), append(frame(0x80|WSPing, "x", nil), frame(0x80, "lo", nil)...)...), false, 5)
	f.Add(AppendWSClose(nil, WSCloseGoingAway, "bye", &testKey), true, 1)
	f.Add(AppendWSHeader(nil, WSBinary, 70000, nil), false, 2)
	f.Add([]byte{0xC1, 0x00}, false, 1)
	f.Add([]byte{0x88, 0x01, 0x03}, false, 2)
	f.Fuzz(func(t *testing.T, in []byte, masked bool, split int) {
		const max = 4096
		whole, errWhole := readWS(in, masked, max, 0)
		step := 1 + split%17
		if step < 1 {
			step = 1
		}
		pieces, errPieces := readWS(in, masked, max, step)
		if fmt.Sprint(whole) != fmt.Sprint(pieces) || wsErrClass(errWhole) != wsErrClass(errPieces) {
			t.Fatalf("whole: %v, %v; in pieces of %d: %v, %v", whole, errWhole, step, pieces, errPieces)
		}
		if wsErrClass(errWhole) == errUnnamed {
			t.Fatalf("error %v is none of the named ones", errWhole)
		}
		var again []byte
		var key *[4]byte
		if masked {
			key = &testKey
		}
		for _, m := range whole {
			switch m.Op {
			case WSText, WSBinary:
				if len(m.Payload) > max {
					t.Fatalf("a %d-byte message passed the bound of %d", len(m.Payload), max)
				}
				if m.Op == WSText && !utf8.ValidString(m.Payload) {
					t.Fatalf("text message %q is not UTF-8", m.Payload)
				}
			case WSClose, WSPing, WSPong:
				if len(m.Payload) > MaxWSControlPayload {
					t.Fatalf("control frame of %d bytes", len(m.Payload))
				}
			default:
				t.Fatalf("message with opcode 0x%x", m.Op)
			}
			again = AppendWSFrame(again, m.Op, []byte(m.Payload), key)
		}
		back, err := readWS(again, masked, max, 0)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(whole) {
			t.Fatalf("re-framed messages read back as %v, %v; want %v", back, err, whole)
		}
	})
}
