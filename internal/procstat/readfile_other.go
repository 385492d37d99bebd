//go:build !unix

package procstat

import "os"

// readFile reads the file at path (buf is not used here).
func readFile(path string, _ []byte) ([]byte, error) { return os.ReadFile(path) }
