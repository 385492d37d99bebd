package server

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
)

// TestInstance: a server with Config.Instance names it in every stream's
// head, after the reference's fields (closing the connection or keeping
// it; HTTP/2 too), and in every chunk beside pi_ts; the other bytes are
// those of a server without one.
func TestInstance(t *testing.T) {
	const id = "replica-2"
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, Instance: id})
	plain := startServer(t, Config{Tokens: 5, DelayMs: 0.1})
	for _, keep := range []bool{false, true} {
		head, body := chatRequest(`{"model":"x","stream":true,"pi_tokens":3,"pi_delay_ms":0.1}`)
		if keep {
			head = strings.Replace(head, "Connection: close\r\n", "", 1)
		}
		h, b := splitResponse(t, exchange(t, srv, head+body))
		ph, pb := splitResponse(t, exchange(t, plain, head+body))
		if want := strings.TrimSuffix(ph, "\r\n") + api.InstanceHeader + ": " + id + "\r\n\r\n"; h != want {
			t.Errorf("keep-alive %v: head %q, want %q", keep, h, want)
		}
		chunks, plainChunks := dechunk(t, b), dechunk(t, pb)
		if len(chunks) != len(plainChunks) {
			t.Fatalf("keep-alive %v: %d chunks, %d without an instance", keep, len(chunks), len(plainChunks))
		}
		stamp := regexp.MustCompile(`"pi_ts":\d+`)
		for i, c := range chunks[:len(chunks)-1] {
			if !stamp.MatchString(c) || !strings.Contains(c, `,"pi_instance":"`+id+`","model":`) {
				t.Errorf("chunk %d %q: no pi_instance after pi_ts", i, c)
			}
			// The same chunk without the field, ids and stamps aside.
			strip := func(s string) string {
				s = strings.Replace(s, `,"pi_instance":"`+id+`"`, "", 1)
				s = stamp.ReplaceAllString(s, `"pi_ts":0`)
				s = regexp.MustCompile(`"created":\d+`).ReplaceAllString(s, `"created":0`)
				return regexp.MustCompile(`sse-latency-\d+`).ReplaceAllString(s, "sse-latency-N")
			}
			if got, want := strip(c), strip(plainChunks[i]); got != want {
				t.Errorf("chunk %d = %q without its instance, want %q", i, got, want)
			}
		}
	}
	h2 := newH2Setup(t, false, Config{Tokens: 5, DelayMs: 0.1, Instance: id})
	resp, body := h2.post(t, api.ChatPath, `{"model":"x","stream":true,"pi_tokens":2,"pi_delay_ms":0.1}`)
	if got := resp.Header.Get(api.InstanceHeader); got != id {
		t.Errorf("HTTP/2: %s %q, want %q", api.InstanceHeader, got, id)
	}
	if n := strings.Count(body, `"pi_instance":"`+id+`"`); n != 4 {
		t.Errorf("HTTP/2: %d events name the instance, want 4 (role, 2 tokens, finish):\n%s", n, body)
	}
}
