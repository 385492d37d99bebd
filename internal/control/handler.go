// Package control is the dummy server's control plane: the timing records
// a client in another process (on another host) needs to measure through a
// gateway as precisely as a client in the same process. The server side
// (Handler, Serve) answers, on a listener of its own and behind a token,
// with its clock, for clock-offset estimation, and with the records of its
// emission registry by request id: when the request arrived, when its
// client went away, and when each token was written. The client side
// (Client) reads them; a Syncer estimates the clock offset in bursts of
// exchanges (package clocksync), before a run and periodically during it;
// a Resolver completes each finished record with what the server knew,
// converted to the client's clock.
//
// The endpoints, all GET, all requiring "Authorization: Bearer <token>":
//
//	/v1/clock             {"now_ns": <server clock>, "instance": "<id>"} (instance only when the
//	                      server has one: the id its events carry, api.InstanceKey)
//	/v1/requests/{id}     one record; 404 for an id without one
//	/v1/requests?id=a&id=b[&emitted=1]
//	                      {"requests": [<record>...], "unknown": ["b"]}, at most MaxIDs ids;
//	                      emitted_ns only with emitted=1
//
// A record is
//
//	{"id": "…", "arrived_ns": N, "started_ns": N, "think_end_ns": N, "gone_ns": N,
//	 "heartbeats": N, "finished": bool, "tokens": N, "emitted_ns": [N, …]}
//
// with times on the server's clock (epoch nanoseconds, 0 = unknown):
// arrived_ns when the server had read the whole request, started_ns when
// it began the stream (wrote its head), think_end_ns when it planned its
// first token after the think (0: none), gone_ns when it found its client
// gone (0 if it did not), heartbeats how many heartbeats it wrote on the
// stream, finished whether the stream has ended, tokens its number of
// tokens (all phases), emitted_ns when each was written (0 for one not
// written). Errors are OpenAI-style JSON errors like
// the model server's. Nothing but these timing records is served.
package control

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
)

// MaxIDs is the most request ids one /v1/requests call may name.
const MaxIDs = 256

// Paths of the endpoints.
const (
	ClockPath    = "/v1/clock"
	RequestsPath = "/v1/requests"
)

// Handler serves the timing records of a registry. Create it with
// NewHandler.
type Handler struct {
	reg      *emission.Registry
	token    [sha256.Size]byte // the token's digest: compared in constant time, whatever its length
	clk      clock.Clock       // the server's clock (clock.Real unless SetClock)
	instance string            // the server's instance id, "" if none
}

// NewHandler returns the handler of reg's records, guarded by token, which
// must not be empty, for the server of instance id instance ("" if it has
// none; else a valid id, api.ValidID).
func NewHandler(reg *emission.Registry, token, instance string) (*Handler, error) {
	switch {
	case token == "":
		return nil, fmt.Errorf("control: empty token")
	case instance != "" && !api.ValidID(instance):
		return nil, fmt.Errorf("control: instance id %s: want 1 to 64 of A-Z, a-z, 0-9 and - _ . (no other character)", quote(instance))
	}
	return &Handler{reg: reg, token: sha256.Sum256([]byte(token)), clk: clock.Real, instance: instance}, nil
}

// SetClock makes h answer with readings of c (nil: clock.Real): the
// server's clock. Call it before h serves.
func (h *Handler) SetClock(c clock.Clock) { h.clk = clock.Or(c) }

// ServeHTTP answers one request: 401 without the token (before anything
// else, so that a client without it learns nothing, not even which paths
// exist), then the endpoint of the path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sse-latency control"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong token: send Authorization: Bearer <the server's --control-token>")
		return
	}
	path := r.URL.Path
	switch {
	case path == ClockPath:
		if checkGet(w, r) {
			h.serveClock(w)
		}
	case path == RequestsPath:
		if checkGet(w, r) {
			h.serveRequests(w, r)
		}
	case strings.HasPrefix(path, RequestsPath+"/"):
		if checkGet(w, r) {
			h.serveRequest(w, strings.TrimPrefix(path, RequestsPath+"/"))
		}
	default:
		writeError(w, http.StatusNotFound, "unknown_url", fmt.Sprintf("unknown path %s: this control endpoint serves GET %s, GET %s?id=… and GET %s/{id}",
			quote(path), ClockPath, RequestsPath, RequestsPath))
	}
}

// authorized compares the request's bearer token with the handler's in
// constant time (their digests, so that the length does not show either).
func (h *Handler) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	d := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(d[:], h.token[:]) == 1
}

// checkGet answers 405 to any method but GET, and reports whether the
// request may go on.
func checkGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet {
		return true
	}
	w.Header().Set("Allow", http.MethodGet)
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("method %s not allowed on %s: use GET", quote(r.Method), quote(r.URL.Path)))
	return false
}

// serveClock answers the server's clock, read as late as possible: right
// before the answer is written.
func (h *Handler) serveClock(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	b := make([]byte, 0, 64+len(h.instance))
	b = strconv.AppendInt(append(b, `{"now_ns":`...), h.clk.Now(), 10)
	if h.instance != "" {
		b = append(append(append(b, `,"instance":"`...), h.instance...), '"') // a valid id needs no escaping
	}
	w.Write(append(b, "}\n"...))
}

// serveRequest answers the record of one id, with its emission times.
func (h *Handler) serveRequest(w http.ResponseWriter, id string) {
	if !api.ValidID(id) {
		writeError(w, http.StatusBadRequest, "invalid_id", fmt.Sprintf("request id %s: want 1 to 64 of A-Z a-z 0-9 - _ .", quote(id)))
		return
	}
	tm := h.reg.Lookup(id)
	if tm == nil {
		writeError(w, http.StatusNotFound, "unknown_id", fmt.Sprintf("no record of request id %s (never seen, or expired)", id))
		return
	}
	bw := startJSON(w)
	appendRecord(bw, id, tm, true)
	bw.WriteString("\n")
	bw.Flush()
}

// serveRequests answers the records of the ids of the query.
func (h *Handler) serveRequests(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_query", "malformed query: "+err.Error())
		return
	}
	for name := range q {
		if name != "id" && name != "emitted" {
			writeError(w, http.StatusBadRequest, "invalid_query", fmt.Sprintf("unknown query parameter %s: want id (repeated) and emitted", quote(name)))
			return
		}
	}
	emitted := false
	switch v := q["emitted"]; {
	case len(v) > 1:
		writeError(w, http.StatusBadRequest, "invalid_query", "emitted given more than once")
		return
	case len(v) == 1 && v[0] == "1":
		emitted = true
	case len(v) == 1 && v[0] != "0":
		writeError(w, http.StatusBadRequest, "invalid_query", fmt.Sprintf("emitted=%s: want 0 or 1", quote(v[0])))
		return
	}
	ids := q["id"]
	switch {
	case len(ids) == 0:
		writeError(w, http.StatusBadRequest, "invalid_query", "no id: name the request ids with id=…")
		return
	case len(ids) > MaxIDs:
		writeError(w, http.StatusBadRequest, "too_many_ids", fmt.Sprintf("%d ids: at most %d per call", len(ids), MaxIDs))
		return
	}
	for _, id := range ids {
		if !api.ValidID(id) {
			writeError(w, http.StatusBadRequest, "invalid_id", fmt.Sprintf("request id %s: want 1 to 64 of A-Z a-z 0-9 - _ .", quote(id)))
			return
		}
	}
	bw := startJSON(w)
	bw.WriteString(`{"requests":[`)
	var unknown []string
	n := 0
	for _, id := range ids {
		tm := h.reg.Lookup(id)
		if tm == nil {
			unknown = append(unknown, id)
			continue
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		appendRecord(bw, id, tm, emitted)
		n++
	}
	bw.WriteString(`],"unknown":[`)
	for i, id := range unknown {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`"` + id + `"`) // a valid id needs no escaping
	}
	bw.WriteString("]}\n")
	bw.Flush()
}

// startJSON starts a 200 JSON answer written through a buffer: a record
// may hold millions of emission times, encoded as they are read rather
// than built in memory.
func startJSON(w http.ResponseWriter) *bufio.Writer {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return bufio.NewWriterSize(w, 32<<10)
}

// appendRecord writes the record of id (a valid id, which needs no
// escaping), with its emission times when emitted.
func appendRecord(bw *bufio.Writer, id string, tm *emission.Times, emitted bool) {
	var num [24]byte
	field := func(name string, v int64) {
		bw.WriteString(`,"` + name + `":`)
		bw.Write(strconv.AppendInt(num[:0], v, 10))
	}
	bw.WriteString(`{"id":"` + id + `"`)
	field("arrived_ns", tm.Arrived())
	field("started_ns", tm.StreamStart())
	field("think_end_ns", tm.ThinkEnd())
	field("gone_ns", tm.GoneAt())
	field("heartbeats", int64(tm.Heartbeats()))
	bw.WriteString(`,"finished":` + strconv.FormatBool(tm.Finished()))
	field("tokens", int64(tm.Len()))
	if emitted {
		bw.WriteString(`,"emitted_ns":[`)
		for k := range tm.Len() {
			if k > 0 {
				bw.WriteByte(',')
			}
			bw.Write(strconv.AppendInt(num[:0], tm.At(k), 10))
		}
		bw.WriteByte(']')
	}
	bw.WriteByte('}')
}

// maxQuoted bounds what an error message quotes of a request's method, path
// or parameter.
const maxQuoted = 256

// quote returns s quoted for a message, at most maxQuoted bytes of it.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

// writeError answers an OpenAI-style JSON error, as the model server does.
func writeError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{apiError{Message: message, Type: errorType(status), Code: code}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// apiError is the body of an error answer (the client reads it back).
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "not_found_error"
	}
	return "invalid_request_error"
}
