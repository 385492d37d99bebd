package client

import "strings"

// Redacted replaces a secret wherever Redact masks one.
const Redacted = "REDACTED"

// Redact returns the header line "Name: value" fit to print: the value of
// a field that carries a secret is masked — Authorization and
// Proxy-Authorization keep their scheme word ("Authorization: Bearer
// REDACTED"), Cookie and Set-Cookie their cookie names ("Cookie: a=REDACTED;
// b=REDACTED"); x-api-key, api-key and any name ending in "api-key",
// "apikey", "token" or "secret" (any case) are masked whole. Other lines
// come back unchanged. A line without a colon whose first word is such a
// name is masked after that word (a colon after a space belongs to the
// value: "x-api-key sk:1" has none).
func Redact(header string) string {
	name, value, ok := strings.Cut(header, ":")
	sep := ":"
	if ok && strings.ContainsAny(strings.TrimSpace(name), " \t") {
		ok = false
	}
	if !ok {
		// "Authorization Bearer x": a header line missing its colon.
		name, value, ok = strings.Cut(header, " ")
		sep = " "
		if !ok {
			return header
		}
	}
	n := strings.ToLower(strings.TrimSpace(name))
	lead := value[:len(value)-len(strings.TrimLeft(value, " \t"))]
	v := strings.TrimSpace(value)
	switch {
	case n == "authorization" || n == "proxy-authorization":
		if scheme, _, ok := strings.Cut(v, " "); ok {
			return name + sep + lead + scheme + " " + Redacted
		}
	case n == "cookie" || n == "set-cookie":
		parts := strings.Split(v, ";")
		for i, p := range parts {
			if cn, _, ok := strings.Cut(p, "="); ok {
				parts[i] = cn + "=" + Redacted
			} else if strings.TrimSpace(p) != "" {
				parts[i] = Redacted
			}
		}
		return name + sep + lead + strings.Join(parts, ";")
	case !secretName(n):
		return header
	}
	if v == "" {
		return header
	}
	return name + sep + lead + Redacted
}

// secretName reports whether a header named n (lower case) carries a
// secret in its whole value.
func secretName(n string) bool {
	switch n {
	case "authorization", "proxy-authorization", "x-api-key", "api-key":
		return true
	}
	for _, suffix := range []string{"api-key", "apikey", "api_key", "token", "secret"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}
