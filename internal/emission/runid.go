package emission

import (
	"crypto/rand"
	"strings"
)

// RunIDLen is the length of a run id: 30 random bits, enough for the runs
// that share a gateway or a server not to mix their requests up.
const RunIDLen = 6

// NewRunID returns a short random id (lowercase letters and digits) that
// prefixes a run's request ids (a measurement's, a check's), so that two
// runs sharing a gateway (or a server) cannot mix their entries up.
func NewRunID() string {
	return strings.ToLower(rand.Text()[:RunIDLen])
}
