//go:build !linux

package cli

import "os"

// runRelay: the stand-in gateway is Linux's only.
func runRelay([]string) int {
	os.Stderr.WriteString("the stand-in relay needs Linux\n")
	return 2
}

// niceAll does nothing here.
func niceAll(int) {}
