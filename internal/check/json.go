package check

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes the report as an indented JSON document (the
// check's --json): schema_version, target, api, server, long, start, end,
// and the rows with their status, evidence, fix, duration, requests,
// failure texts and, for the timing rows, the verdict's signature.
func WriteJSON(w io.Writer, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the check: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
