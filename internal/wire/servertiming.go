package wire

import (
	"math"
	"strconv"
	"strings"
)

// MaxServerTimingMetrics bounds the metrics ParseServerTiming returns from
// one Server-Timing value; the rest are ignored.
const MaxServerTimingMetrics = 32

// ServerTimingMetric is one metric of a Server-Timing header (W3C Server
// Timing): its name, its duration in milliseconds when it has a valid dur
// parameter, and its description.
type ServerTimingMetric struct {
	Name   string
	Dur    float64 // milliseconds; meaningful when HasDur
	HasDur bool
	Desc   string
}

// ParseServerTiming reads a Server-Timing value — a comma-separated list
// of metrics, each a token name followed by ";"-separated parameters
// (name=value, the value a token or a quoted string):
//
//	cache;desc="Cache Read";dur=23.2, db;dur=53, app;dur=47.2
//
// It is tolerant, as browsers are: a metric whose name is not a token is
// skipped, as is a parameter that is not name=value; of repeated dur or
// desc parameters the first counts; a dur that is not a finite number
// leaves the metric without a duration; unknown parameters are ignored.
// Commas and semicolons inside quoted strings do not split. At most
// MaxServerTimingMetrics metrics are returned. Parameter names compare
// case-insensitively; metric names are returned as sent.
func ParseServerTiming(v string) []ServerTimingMetric {
	var out []ServerTimingMetric
	for _, item := range splitOutsideQuotes(v, ',') {
		if len(out) == MaxServerTimingMetrics {
			break
		}
		parts := splitOutsideQuotes(item, ';')
		name := strings.Trim(parts[0], " \t")
		if !validToken(name) {
			continue
		}
		m := ServerTimingMetric{Name: name}
		var seenDur, seenDesc bool
		for _, p := range parts[1:] {
			k, val, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			k = strings.Trim(k, " \t")
			val, ok = paramValue(strings.Trim(val, " \t"))
			if !ok {
				continue
			}
			switch {
			case strings.EqualFold(k, "dur") && !seenDur:
				seenDur = true
				if d, err := strconv.ParseFloat(val, 64); err == nil && !math.IsInf(d, 0) && !math.IsNaN(d) {
					m.Dur, m.HasDur = d, true
				}
			case strings.EqualFold(k, "desc") && !seenDesc:
				seenDesc = true
				m.Desc = val
			}
		}
		out = append(out, m)
	}
	return out
}

// AppendServerTiming appends metrics as a Server-Timing value that
// ParseServerTiming reads back: each name, then its duration (dur=, in the
// shortest form that reads back exactly) when it has one, then its
// description as a quoted string when not empty; metrics separated by ", ".
// Names must be tokens.
func AppendServerTiming(dst []byte, metrics []ServerTimingMetric) []byte {
	for i, m := range metrics {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, m.Name...)
		if m.HasDur {
			dst = append(dst, ";dur="...)
			dst = strconv.AppendFloat(dst, m.Dur, 'g', -1, 64)
		}
		if m.Desc != "" {
			dst = append(dst, ";desc="...)
			dst = appendQuoted(dst, m.Desc)
		}
	}
	return dst
}

// splitOutsideQuotes splits s at every sep that is not inside a quoted
// string (a backslash escapes the next byte inside one); it always returns
// at least one part.
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// paramValue reads a parameter value: a token as it is, a quoted string
// unquoted (its backslash escapes resolved). ok is false for anything else.
func paramValue(v string) (string, bool) {
	if !strings.HasPrefix(v, `"`) {
		return v, validToken(v)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			if i+1 == len(v) {
				return "", false
			}
			i++
			b.WriteByte(v[i])
		case '"':
			return b.String(), i == len(v)-1
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

// appendQuoted appends s as a quoted string, escaping '"' and '\'.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}
