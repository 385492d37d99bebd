package tlsrecord

import (
	"bytes"
	"crypto/tls"
	"testing"
)

// fuzzSecrets are the fixed traffic secrets of the fuzz target's
// connection: the seeds are sealed under them.
var fuzzSecrets = [2][]byte{bytes.Repeat([]byte{0xc1}, 32), bytes.Repeat([]byte{0x5e}, 32)}

// fuzzPeer returns the writer (the server's side) and the reader (the
// client's) of the fuzz target's connection.
func fuzzPeer(t testing.TB) (w, r *Conn) {
	w, err := New(tls.TLS_AES_128_GCM_SHA256, fuzzSecrets[0], fuzzSecrets[1])
	if err != nil {
		t.Fatal(err)
	}
	r, err = New(tls.TLS_AES_128_GCM_SHA256, fuzzSecrets[1], fuzzSecrets[0])
	if err != nil {
		t.Fatal(err)
	}
	return w, r
}

// FuzzOpen feeds arbitrary bytes to the record reader in two reads split
// at an arbitrary point: it must never panic, and what it opens must not
// depend on where the reads split the stream.
func FuzzOpen(f *testing.F) {
	w, _ := fuzzPeer(f)
	ticket := w.seal(nil, typeHandshake, []byte{msgNewSessionTicket, 0, 0, 2, 0xaa, 0xbb})
	f.Add(ticket, uint16(3))
	data := w.Seal(nil, []byte("data: {\"choices\":[]}\n\n"))
	f.Add(data, uint16(7))
	ku := w.SealKeyUpdate(nil, true)
	f.Add(append(ku, w.Seal(nil, []byte("after"))...), uint16(30))
	f.Add(w.SealAlert(nil, alertCloseNotify), uint16(1))
	f.Add(w.SealAlert(nil, 40), uint16(0))
	frag := w.seal(nil, typeHandshake, []byte{msgNewSessionTicket, 0, 0})
	f.Add(frag, uint16(2))
	f.Add([]byte{23, 3, 3, 0xff, 0xff}, uint16(2))
	f.Add([]byte{22, 3, 1, 0, 5, 1, 2, 3, 4, 5}, uint16(5))
	f.Fuzz(func(t *testing.T, in []byte, at uint16) {
		_, whole := fuzzPeer(t)
		want, werr := whole.Open(nil, in)
		_, split := fuzzPeer(t)
		k := int(at) % (len(in) + 1)
		got, gerr := split.Open(nil, in[:k])
		if gerr == nil {
			got, gerr = split.Open(got, in[k:])
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("one read: %v; split at %d: %v", werr, k, gerr)
		}
		if werr == nil && !bytes.Equal(want, got) {
			t.Fatalf("one read opened %q, split at %d %q", want, k, got)
		}
		if werr == nil && whole.Pending() != split.Pending() {
			t.Fatalf("one read keeps %d bytes, split at %d %d", whole.Pending(), k, split.Pending())
		}
	})
}

// TestSealOpenRoundTrip: what Seal writes, Open reads back, whatever the
// size and wherever the reads split it.
func TestSealOpenRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 100, MaxPlaintext - 1, MaxPlaintext, MaxPlaintext + 1, 3*MaxPlaintext + 17} {
		w, r := fuzzPeer(t)
		msg := bytes.Repeat([]byte{'x'}, n)
		in := w.Seal(nil, msg)
		var got []byte
		var err error
		for i := 0; i < len(in) && err == nil; i += 1000 {
			got, err = r.Open(got, in[i:min(i+1000, len(in))])
		}
		if err != nil || !bytes.Equal(got, msg) || r.Pending() != 0 {
			t.Errorf("Seal(%d bytes) then Open in reads of 1000: %d bytes, %v, %d pending", n, len(got), err, r.Pending())
		}
	}
}

// BenchmarkOpen opens one token-sized record (a chunked SSE event of
// ~300 bytes) per op, in the caller's buffer: 0 allocs/op.
func BenchmarkOpen(b *testing.B) {
	w, r := fuzzPeer(b)
	tok := bytes.Repeat([]byte{'t'}, 300)
	recs := make([][]byte, 1024)
	for i := range recs {
		recs[i] = w.Seal(nil, tok)
	}
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(tok)))
	i := 0
	for b.Loop() {
		if i == len(recs) { // the sequence numbers go on: seal more
			b.StopTimer()
			for j := range recs {
				recs[j] = w.Seal(recs[j][:0], tok)
			}
			i = 0
			b.StartTimer()
		}
		var err error
		if dst, err = r.Open(dst[:0], recs[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSeal seals one request-sized record per op into a reused
// buffer.
func BenchmarkSeal(b *testing.B) {
	w, _ := fuzzPeer(b)
	req := bytes.Repeat([]byte{'r'}, 600)
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		dst = w.Seal(dst[:0], req)
	}
}
