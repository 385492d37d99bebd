package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzHandler sends the control handler requests of any method and target,
// with the token or without: every answer is one of the statuses the
// handler documents, an error is an OpenAI-style JSON error, and a 200 is
// JSON.
func FuzzHandler(f *testing.F) {
	for _, seed := range []struct {
		method, target string
		auth           bool
	}{
		{"GET", "/v1/clock", true},
		{"GET", "/v1/requests/a", true},
		{"GET", "/v1/requests?id=a&id=b&emitted=1", true},
		{"GET", "/v1/requests?id=%zz", true},
		{"GET", "/v1/requests/../clock", true},
		{"POST", "/v1/clock", true},
		{"GET", "/v1/clock", false},
		{"GET", "/v1/requests?id=a&emitted=2&x", true},
	} {
		f.Add(seed.method, seed.target, seed.auth)
	}
	h, err := NewHandler(testRegistry(), testToken, "")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, target string, auth bool) {
		req, err := http.NewRequest(method, "http://control.test"+target, nil)
		if err != nil {
			return // not a request a client could send
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		switch rec.Code {
		case http.StatusOK:
			if !json.Valid(body) {
				t.Fatalf("%s %q: 200 with a body that is not JSON: %q", method, target, body)
			}
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed:
			var e struct {
				Error apiError `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Code == "" {
				t.Fatalf("%s %q: %d with body %q, want an OpenAI-style JSON error", method, target, rec.Code, body)
			}
		default:
			t.Fatalf("%s %q: status %d", method, target, rec.Code)
		}
		if !auth && rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s %q without the token: %d, want 401", method, target, rec.Code)
		}
	})
}
