package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestHelpGolden: each command's -h prints its help, pinned in
// testdata/help (go test -update rewrites them), so that it cannot drift
// unseen; the measurement's is testdata/usage.txt's.
func TestHelpGolden(t *testing.T) {
	for _, c := range commands {
		name, args := c.name, []string{c.name, "-h"}
		if name == "" {
			name, args = "sse-latency", []string{"-h"}
		}
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Main(context.Background(), args, &out, &errOut); code != ExitOK || out.Len() != 0 {
				t.Fatalf("%q: exit %d, stdout %q; want 0 and nothing", args, code, out.String())
			}
			golden := filepath.Join("testdata", "help", name+".txt")
			if c.name == "" {
				golden = filepath.Join("testdata", "usage.txt") // TestUsagePinned's too
			}
			if *update {
				if err := os.WriteFile(golden, errOut.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if errOut.String() != string(want) {
				t.Errorf("%q drifted from %s (go test -update to accept):\n%s", args, golden, errOut.String())
			}
			if errOut.String() != commandHelp(c.name) {
				t.Errorf("%q printed another text than the command's help", args)
			}
		})
	}
}

// TestHelpIsTheFlagSets: every flag of every command has a usage, and the
// command's help lists it (a command that takes the run's flags: those it
// adds or reads otherwise), with its shorthand; the measurement's help
// lists every subcommand with its summary, and `help` prints them.
func TestHelpIsTheFlagSets(t *testing.T) {
	run := FlagSets()[""]
	// The flag sets' defaults are the commands' own.
	for name, want := range map[string]map[string]string{
		"":      {"listen": DefaultConfig().Listen, "tokens": "1000", "delay": "5"},
		"check": {"listen": DefaultConfig().Listen, "api": DefaultConfig().API},
		"probe": {"every": DefaultProbeEvery.String(), "metrics": DefaultProbeMetrics},
		"sweep": {"knee-threshold": "1"},
	} {
		for flag, def := range want {
			if got := FlagSets()[name].Lookup(flag).DefValue; got != def {
				t.Errorf("%q --%s: default %q, want %q", name, flag, got, def)
			}
		}
	}
	for name, fs := range FlagSets() {
		c := lookup(name)
		help := commandHelp(name)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" {
				t.Errorf("%q --%s has no usage", name, f.Name)
			}
			if r := run.Lookup(f.Name); c.runs && r != nil && r.Usage == f.Usage {
				if strings.Contains(help, "--"+f.Name+" <") || strings.Contains(help, "--"+f.Name+"  ") {
					t.Errorf("%q's help lists the run's --%s, which sse-latency -h describes", name, f.Name)
				}
				return
			}
			left := "--" + f.Name
			if f.Shorthand != "" {
				left = "-" + f.Shorthand + ", " + left
			}
			if !strings.Contains(help, "  "+left+" ") && !strings.Contains(help, "  "+left+"\n") {
				t.Errorf("%q's help does not list %s", name, left)
			}
		})
		if name != "" && (!strings.Contains(usage(), "  "+name+"  ") || !strings.Contains(usage(), c.summary)) {
			t.Errorf("sse-latency -h does not list %q with its summary %q", name, c.summary)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help"}, ExitOK, usage()},
		{[]string{"help", "sweep"}, ExitOK, sweepUsage()},
		{[]string{"help", "check"}, ExitOK, checkHelp()},
		{[]string{"help", "--help"}, ExitOK, commandHelp("help")},
		{[]string{"help", "nosuch"}, ExitFailure, "sse-latency: help: no command \"nosuch\"\n" + usage()},
	} {
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), tt.args, &out, &errOut); code != tt.code || errOut.String() != tt.want || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %.120q; want %d and %.120q", tt.args, code, errOut.String(), tt.code, tt.want)
		}
	}
}
