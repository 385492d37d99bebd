// Package trace reads the request traces --trace replays: Mooncake's JSONL
// (AIPerf's mooncake_trace: one JSON object a line with "timestamp" in
// milliseconds, "input_length" and "output_length" in tokens and
// "hash_ids", the prompt's prefix blocks) and BurstGPT's CSV (a header
// naming "Timestamp" in seconds, "Request tokens" and "Response tokens",
// among others).
//
// A trace is untrusted input: its size, its line length, its number of
// lines and every value are bounded; a line that does not parse or holds
// an absurd value is an error that names the line and the field — or,
// with Options.SkipBad, is skipped and counted. Timestamps out of order
// are sorted (stably), which the Trace records. Arrival offsets are
// relative to the earliest timestamp.
package trace

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Bounds of a trace.
const (
	MaxFileBytes = 512 << 20 // the file
	MaxLineBytes = 1 << 20   // one line: hash_ids of a million-token prompt fit many times over
	MaxEntries   = 1 << 22   // lines (BurstGPT's largest file has 3.9 million)
	MaxBlocks    = 1 << 16   // hash_ids of one line
	MaxIDBytes   = 64        // a string hash id (LiteLLM's are 16 hex characters)
	// MaxOffsetMs bounds a timestamp: a year of milliseconds (BurstGPT's
	// files span 121 days).
	MaxOffsetMs = 366 * 24 * 3600 * 1000
)

// Formats, as Trace.Format names them.
const (
	Mooncake = "mooncake"
	BurstGPT = "burstgpt"
)

// Errors wrapped by Parse's.
var (
	ErrLine    = errors.New("bad trace line")
	ErrTooBig  = errors.New("trace too large")
	ErrNoTrace = errors.New("not a trace")
)

// Entry is one request of a trace.
type Entry struct {
	Line   int      // its line in the file, from 1
	AtNs   int64    // its arrival, ns after the trace's earliest
	Input  int      // prompt tokens
	Output int      // output tokens
	Blocks []uint64 // the prompt's prefix blocks, in order (a string id hashed); nil when the line has none
}

// Trace is a parsed trace.
type Trace struct {
	Format  string
	Entries []Entry // in arrival order
	Lines   int     // lines read, header and blank lines included
	Skipped int     // bad lines skipped (Options.SkipBad)
	// FirstSkipped is the error of the first line skipped, for the note
	// that says how many were.
	FirstSkipped string
	Sorted       bool // the timestamps were out of order: the entries were sorted
}

// Options bound and shape a parse.
type Options struct {
	// MaxInput and MaxOutput bound a line's token counts (0: no bound of
	// their own beyond the int32 range).
	MaxInput, MaxOutput int
	// SkipBad skips the lines that do not parse or hold a bad value,
	// counting them, instead of failing.
	SkipBad bool
}

// Read parses the trace file at path (Parse), refusing a file larger
// than MaxFileBytes before reading it.
func Read(path string, o Options) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s has %d bytes, more than %d", ErrTooBig, path, st.Size(), MaxFileBytes)
	}
	return Parse(f, o)
}

// Parse reads a trace: Mooncake JSONL when its first non-blank line is a
// JSON object, else BurstGPT CSV, whose first line is its header.
func Parse(r io.Reader, o Options) (*Trace, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxFileBytes+1), 64<<10)
	t := &Trace{}
	var csvCols *burstCols
	var read int64
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) && line == nil {
			break
		}
		t.Lines++
		read += int64(len(line)) + 1
		if read > MaxFileBytes+1 {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooBig, MaxFileBytes)
		}
		long := errors.Is(err, errLong)
		if err != nil && !errors.Is(err, io.EOF) && !long {
			return nil, fmt.Errorf("trace: line %d: %w", t.Lines, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 && !long {
			continue
		}
		if t.Format == "" && !long {
			if line[0] == '{' {
				t.Format = Mooncake
			} else {
				t.Format = BurstGPT
				c, err := burstHeader(line)
				if err != nil {
					return nil, err
				}
				csvCols = c
				continue
			}
		}
		var e Entry
		var lerr error
		switch {
		case long:
			lerr = err
		case t.Format == Mooncake:
			e, lerr = mooncakeLine(line, o)
		default:
			e, lerr = csvCols.entry(line, o)
		}
		if lerr != nil {
			lerr = fmt.Errorf("%w: line %d: %v", ErrLine, t.Lines, lerr)
			if !o.SkipBad {
				return nil, lerr
			}
			if t.Skipped == 0 {
				t.FirstSkipped = lerr.Error()
			}
			t.Skipped++
			continue
		}
		if len(t.Entries) == MaxEntries {
			return nil, fmt.Errorf("%w: more than %d requests (cut it, or use --trace-limit on a shorter file)", ErrTooBig, MaxEntries)
		}
		e.Line = t.Lines
		t.Entries = append(t.Entries, e)
	}
	if t.Format == "" {
		return nil, fmt.Errorf("%w: the file is empty", ErrNoTrace)
	}
	t.order()
	return t, nil
}

// errLong is the error of a line longer than MaxLineBytes.
var errLong = fmt.Errorf("longer than %d bytes", MaxLineBytes)

// readLine returns the next line without its newline; a line longer than
// MaxLineBytes is an error (its rest is skipped, for SkipBad's sake).
func readLine(br *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		frag, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(frag) > MaxLineBytes {
				for err == bufio.ErrBufferFull { // skip to the line's end
					_, err = br.ReadSlice('\n')
				}
				return []byte{}, errLong
			}
			long = append(long, frag...)
			continue
		}
		if long != nil {
			frag = append(long, frag...)
		}
		if len(frag) > MaxLineBytes {
			return []byte{}, errLong
		}
		if err != nil {
			if len(frag) == 0 {
				return nil, err
			}
			return frag, nil
		}
		return frag[:len(frag)-1], nil
	}
}

// order sorts the entries by arrival, stably (recording that it had to),
// and makes the offsets relative to the earliest.
func (t *Trace) order() {
	if !slices.IsSortedFunc(t.Entries, func(a, b Entry) int { return cmpInt(a.AtNs, b.AtNs) }) {
		t.Sorted = true
		slices.SortStableFunc(t.Entries, func(a, b Entry) int { return cmpInt(a.AtNs, b.AtNs) })
	}
	if len(t.Entries) == 0 {
		return
	}
	first := t.Entries[0].AtNs
	for i := range t.Entries {
		t.Entries[i].AtNs -= first
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mooncakeLine parses one JSONL line.
func mooncakeLine(line []byte, o Options) (Entry, error) {
	var raw struct {
		Timestamp    json.RawMessage `json:"timestamp"`
		Created      json.RawMessage `json:"created_time"`
		InputLength  json.RawMessage `json:"input_length"`
		InputTokens  json.RawMessage `json:"input_tokens"`
		OutputLength json.RawMessage `json:"output_length"`
		OutputTokens json.RawMessage `json:"output_tokens"`
		HashIDs      json.RawMessage `json:"hash_ids"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Entry{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var e Entry
	ts := firstOf(raw.Timestamp, raw.Created)
	ms, err := number("timestamp", ts, 0, MaxOffsetMs)
	if err != nil {
		return e, err
	}
	e.AtNs = int64(math.Round(ms * 1e6))
	if e.Input, err = count("input_length", firstOf(raw.InputLength, raw.InputTokens), o.MaxInput); err != nil {
		return e, err
	}
	if e.Output, err = count("output_length", firstOf(raw.OutputLength, raw.OutputTokens), o.MaxOutput); err != nil {
		return e, err
	}
	if len(raw.HashIDs) > 0 && string(raw.HashIDs) != "null" {
		if e.Blocks, err = hashIDs(raw.HashIDs); err != nil {
			return e, err
		}
	}
	return e, nil
}

func firstOf(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 {
		return a
	}
	return b
}

// number reads field's JSON number, within lo..hi.
func number(field string, raw json.RawMessage, lo, hi float64) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, fmt.Errorf("%s: missing", field)
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %.40s is not a number", field, raw)
	}
	if !(v >= lo && v <= hi) {
		return 0, fmt.Errorf("%s: %.40s is outside %s..%s", field, raw, strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64))
	}
	return v, nil
}

// count reads field's whole number of tokens, from 1 to hi (the int32
// range when hi is 0).
func count(field string, raw json.RawMessage, hi int) (int, error) {
	if hi <= 0 {
		hi = math.MaxInt32
	}
	v, err := number(field, raw, 1, float64(hi))
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%s: %.40s is not a whole number of tokens", field, raw)
	}
	return int(v), nil
}

// hashIDs reads hash_ids: an array of at most MaxBlocks whole numbers
// (0 to 2⁶³−1) or strings of at most MaxIDBytes (hashed to 63 bits).
func hashIDs(raw json.RawMessage) ([]uint64, error) {
	var ids []json.RawMessage
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf("hash_ids: not an array")
	}
	if len(ids) > MaxBlocks {
		return nil, fmt.Errorf("hash_ids: %d blocks, more than %d", len(ids), MaxBlocks)
	}
	out := make([]uint64, len(ids))
	for i, id := range ids {
		if len(id) > 0 && id[0] == '"' {
			var s string
			if json.Unmarshal(id, &s) != nil || s == "" || len(s) > MaxIDBytes {
				return nil, fmt.Errorf("hash_ids[%d]: %.40s is not an id of 1 to %d bytes", i, id, MaxIDBytes)
			}
			h := fnv.New64a()
			h.Write([]byte(s))
			out[i] = h.Sum64() >> 1
			continue
		}
		v, err := strconv.ParseUint(string(id), 10, 63)
		if err != nil {
			return nil, fmt.Errorf("hash_ids[%d]: %.40s is not a whole number from 0 to 2^63-1 or a string", i, id)
		}
		out[i] = v
	}
	return out, nil
}

// burstCols are the columns of a BurstGPT CSV, from its header.
type burstCols struct {
	n                   int
	ts, request, output int
}

// burstHeader reads the header of a BurstGPT CSV.
func burstHeader(line []byte) (*burstCols, error) {
	names, err := splitCSV(line)
	if err != nil {
		return nil, fmt.Errorf("%w: line 1: %v", ErrNoTrace, err)
	}
	c := &burstCols{n: len(names), ts: -1, request: -1, output: -1}
	for i, name := range names {
		switch strings.TrimSpace(name) {
		case "Timestamp":
			c.ts = i
		case "Request tokens":
			c.request = i
		case "Response tokens":
			c.output = i
		}
	}
	if c.ts < 0 || c.request < 0 || c.output < 0 {
		return nil, fmt.Errorf("%w: line 1 is neither a JSON object (Mooncake) nor a BurstGPT header naming Timestamp, Request tokens and Response tokens: %.60q",
			ErrNoTrace, line)
	}
	return c, nil
}

// entry parses one BurstGPT row.
func (c *burstCols) entry(line []byte, o Options) (Entry, error) {
	f, err := splitCSV(line)
	if err != nil {
		return Entry{}, err
	}
	if len(f) != c.n {
		return Entry{}, fmt.Errorf("%d fields, the header names %d", len(f), c.n)
	}
	var e Entry
	s, err := number("Timestamp", json.RawMessage(strings.TrimSpace(f[c.ts])), 0, MaxOffsetMs/1000)
	if err != nil {
		return e, err
	}
	e.AtNs = int64(math.Round(s * 1e9))
	if e.Input, err = count("Request tokens", json.RawMessage(strings.TrimSpace(f[c.request])), o.MaxInput); err != nil {
		return e, err
	}
	if e.Output, err = count("Response tokens", json.RawMessage(strings.TrimSpace(f[c.output])), o.MaxOutput); err != nil {
		if strings.TrimSpace(f[c.output]) == "0" {
			err = fmt.Errorf("%v (a failed request of the trace: --trace-skip-bad skips them)", err)
		}
		return e, err
	}
	return e, nil
}

// splitCSV splits one CSV line: on commas, or by encoding/csv when it
// quotes a field.
func splitCSV(line []byte) ([]string, error) {
	if bytes.IndexByte(line, '"') < 0 {
		return strings.Split(string(line), ","), nil
	}
	r := csv.NewReader(bytes.NewReader(line))
	r.FieldsPerRecord = -1
	f, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("not a CSV row: %v", err)
	}
	return f, nil
}

// Limit is how many of t's entries a replay at speed (> 0) starts within
// the run's bounds: at most limit (0: no limit) and, with a duration > 0,
// those due before it.
func (t *Trace) Limit(limit int, speed float64, durationNs int64) int {
	n := len(t.Entries)
	if limit > 0 {
		n = min(n, limit)
	}
	if durationNs > 0 {
		if i := slices.IndexFunc(t.Entries[:n], func(e Entry) bool { return ScaledNs(e.AtNs, speed) >= durationNs }); i >= 0 {
			n = i
		}
	}
	return n
}

// ScaledNs is a trace offset replayed at speed: offset/speed, rounded,
// saturating.
func ScaledNs(offsetNs int64, speed float64) int64 {
	v := math.Round(float64(offsetNs) / speed)
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
