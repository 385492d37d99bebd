//go:build !unix

package cli

// checkOpenFiles is a no-op where there is no open-files limit to check.
func checkOpenFiles(concurrency int) error { return nil }
