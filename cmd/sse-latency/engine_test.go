package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestInterruptOnEachEngine: SIGINT ends a run on every engine the same
// way — exit status 130, every stream in flight reported as interrupted,
// the tokens measured before it kept. (Where the kernel refuses io_uring,
// --engine uring runs on epoll, with a note.)
func TestInterruptOnEachEngine(t *testing.T) {
	for _, engine := range []string{"epoll", "uring", "goroutine"} {
		t.Run(engine, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p := startLong(t, ctx, nil, "--engine", engine)
			p.signal(t, os.Interrupt)
			code := p.wait(t, 20*time.Second)
			out, errOut := p.stdout.String(), p.stderrText()
			if code != 130 {
				t.Errorf("exit status %d after SIGINT, want 130\nstderr:\n%s", code, errOut)
			}
			if title := "=== gateway: 4 requests, 0 ok, 4 failed, "; !strings.Contains(out, title) {
				t.Errorf("stdout lacks %q:\n%s", title, out)
			}
			if m := interTokenRE.FindStringSubmatch(out); m == nil || m[1] == "0" {
				t.Errorf("the tokens received before the interruption are not reported:\n%s", out)
			}
		})
	}
}
