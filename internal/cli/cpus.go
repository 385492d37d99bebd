package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sse-latency/sse-latency/internal/procstat"
)

// maxCPU bounds the CPU numbers of --cpus (the kernel's CPU sets of
// sched_setaffinity(2) as Go's x/sys holds them).
const maxCPU = 1023

// parseCPUList reads a CPU list as taskset -c and /sys take it: numbers
// and ranges, comma-separated ("0", "0,2-3"). The CPUs come back sorted,
// each once.
func parseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty list (want CPU numbers and ranges, e.g. 0 or 0,2-3)")
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		switch {
		case err1 != nil || err2 != nil || a < 0 || b < 0:
			return nil, fmt.Errorf("%q is not a CPU number or a range of them (e.g. 0 or 2-3)", part)
		case a > b:
			return nil, fmt.Errorf("range %q goes down", part)
		case b > maxCPU:
			return nil, fmt.Errorf("CPU %d is above %d", b, maxCPU)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// formatCPUList writes sorted CPUs as a list with ranges ("0,2-3").
func formatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// onlineCPUs are the host's CPUs, as /proc/stat lists them.
func onlineCPUs() ([]int, error) {
	h, err := procstat.Proc.Host()
	if err != nil {
		return nil, err
	}
	out := make([]int, len(h.CPUs))
	for i, c := range h.CPUs {
		out[i] = c.ID
	}
	return out, nil
}
