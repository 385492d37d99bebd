package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spf13/pflag"
)

// command is one row of the command table: the measurement itself (name
// "") or a subcommand. Every invocation is dispatched through the table,
// and every help text is made from it: the usage line, what the command
// does, its flags as its flag set describes them (see writeFlags), notes.
type command struct {
	name     string // the subcommand; "" for the measurement
	summary  string // one line, in sse-latency -h's list of commands
	synopsis string // the usage line's arguments, after "sse-latency [name]"
	about    string // what it does, before its flags ("" none)
	notes    string // after its flags ("" none)
	// flags is a fresh flag set of the command, as it parses (the values
	// it fills are thrown away): for its help, and for tests.
	flags func() *pflag.FlagSet
	// runs says that the command takes the run's flags besides its own:
	// its help lists only the flags it adds or reads otherwise.
	runs bool
	run  func(ctx context.Context, opt Options, args []string, stdout, stderr io.Writer) (int, *Summary)
}

// commands is the command table, in the order sse-latency -h lists it,
// set at init: the commands refer to themselves through their help.
var commands []command

func init() {
	commands = []command{
		{name: "", summary: "measure a gateway", synopsis: "[options]", about: runAbout, notes: runNotes,
			flags: func() *pflag.FlagSet { return runFlags(defaultConfig(), nil, new(runFlagVars)) }, run: measureCmd},
		{name: "sweep", summary: "a measurement per step of load (-c, --rate or --prompt-bytes lists): the gateway's knee",
			synopsis: "-t GATEWAY (--concurrency LIST | --rate LIST | --prompt-bytes LIST) [options]", about: sweepAbout, notes: sweepNotes, runs: true,
			flags: func() *pflag.FlagSet { return runFlags(defaultConfig(), &listFlags{}, new(runFlagVars)) },
			run: func(ctx context.Context, opt Options, args []string, stdout, stderr io.Writer) (int, *Summary) {
				return sweepMain(ctx, opt.Listener, args, stdout, stderr), nil
			}},
		{name: "check", summary: "a conformance report card of a gateway: PASS, WARN or FAIL per scenario, with the fix",
			synopsis: "-t TARGET [options]", about: checkAbout, notes: checkNotes(),
			flags: func() *pflag.FlagSet { return checkFlags(defaultConfig(), new(checkOptions)) },
			run: func(ctx context.Context, opt Options, args []string, stdout, stderr io.Writer) (int, *Summary) {
				return CheckOn(ctx, opt.Listener, args, stdout, stderr), nil
			}},
		{name: "probe", summary: "a round every --every, served as Prometheus metrics, until stopped",
			synopsis: "-t GATEWAY [--every 30s] [--metrics ADDR] [-r 5 -c 5 -n 100] [flags of sse-latency]", about: probeAbout, notes: probeNotes, runs: true,
			flags: func() *pflag.FlagSet {
				fs := runFlags(defaultConfig(), nil, new(runFlagVars))
				every, metrics := DefaultProbeEvery, DefaultProbeMetrics
				probeFlags(&every, &metrics)(fs)
				return fs
			},
			run: func(ctx context.Context, _ Options, args []string, stdout, stderr io.Writer) (int, *Summary) {
				return probeCmd(ctx, args, stdout, stderr), nil
			}},
		{name: "report", summary: "re-render a run saved with --json, and its warnings",
			synopsis: "RUN.json [--text] [--html OUT]", about: reportAbout,
			flags: func() *pflag.FlagSet { return reportFlags(new(bool), new(string)) }, run: documentCmd(reportCmd)},
		{name: "merge", summary: "combine runs taken in parallel through one gateway",
			synopsis: "[--force] A.json B.json ... > ALL.json", about: mergeAbout,
			flags: func() *pflag.FlagSet { return mergeFlags(new(bool)) }, run: documentCmd(mergeCmd)},
		{name: "compare", summary: "how one run differs from another, metric by metric; exit 3 on a --fail-if regression",
			synopsis: "BEFORE.json AFTER.json [--fail-if CONDITION ...]", about: compareAbout, notes: compareNotes,
			flags: func() *pflag.FlagSet { return compareFlags(new([]string)) }, run: documentCmd(compareCmd)},
		{name: "help", summary: "print this help, or with a command's name, that command's",
			synopsis: "[COMMAND]", flags: func() *pflag.FlagSet { return newSubFlags("help") }, run: helpCmd},
	}
}

// The helps of the measurement (usage) and of the subcommands, each made
// from the table at its first use: made at init, they cost every run
// ~2 ms of CPU and 300 kB before main (GODEBUG=inittrace=1), and a run
// prints none of them.
var (
	usage        = helpOf("")
	sweepUsage   = helpOf("sweep")
	probeUsage   = helpOf("probe")
	reportUsage  = helpOf("report")
	mergeUsage   = helpOf("merge")
	compareUsage = helpOf("compare")
	checkUsage   = helpOf("check")
)

// helpOf returns a function that makes the help of the command name once
// and then returns it.
func helpOf(name string) func() string {
	return sync.OnceValue(func() string { return commandHelp(name) })
}

// checkHelp is the help of `sse-latency check`.
func checkHelp() string { return checkUsage() }

// defaultConfig is a new DefaultConfig, for a flag set whose defaults
// must be the command's.
func defaultConfig() *Config {
	cfg := DefaultConfig()
	return &cfg
}

// documentCmd adapts a subcommand on saved documents to the table.
func documentCmd(cmd func(args []string, stdout, stderr io.Writer) int) func(context.Context, Options, []string, io.Writer, io.Writer) (int, *Summary) {
	return func(_ context.Context, _ Options, args []string, stdout, stderr io.Writer) (int, *Summary) {
		return cmd(args, stdout, stderr), nil
	}
}

// lookup returns the command named name, or nil.
func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// dispatch runs the command args name (the measurement when args[0] is
// no subcommand's name).
func dispatch(ctx context.Context, opt Options, args []string, stdout, stderr io.Writer) (int, *Summary) {
	if len(args) > 0 && args[0] != "" {
		if c := lookup(args[0]); c != nil {
			return c.run(ctx, opt, args[1:], stdout, stderr)
		}
	}
	return lookup("").run(ctx, opt, args, stdout, stderr)
}

// helpCmd runs `sse-latency help [COMMAND]`.
func helpCmd(_ context.Context, _ Options, args []string, _, stderr io.Writer) (int, *Summary) {
	if err := lookup("help").flags().Parse(args); errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stderr, commandHelp("help"))
		return ExitOK, nil
	}
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, usage())
		return ExitOK, nil
	case len(args) == 1 && lookup(args[0]) != nil:
		fmt.Fprint(stderr, commandHelp(args[0]))
		return ExitOK, nil
	}
	fmt.Fprintf(stderr, "sse-latency: help: no command %q\n%s", strings.Join(args, " "), usage())
	return ExitFailure, nil
}

// FlagSets returns a fresh flag set of every command, by name ("" is the
// measurement itself), as each parses: the flags its help lists, for
// tests that check a reference of the flags against the code.
func FlagSets() map[string]*pflag.FlagSet {
	m := make(map[string]*pflag.FlagSet, len(commands))
	for _, c := range commands {
		m[c.name] = c.flags()
	}
	return m
}

// commandHelp is the help of the command named name, made from its row.
func commandHelp(name string) string {
	c := lookup(name)
	var b strings.Builder
	b.WriteString("usage: sse-latency ")
	if c.name != "" {
		b.WriteString(c.name + " ")
	}
	b.WriteString(c.synopsis + "\n")
	if c.about != "" {
		b.WriteString("\n" + c.about)
	}
	fs := c.flags()
	own := func(*pflag.Flag) bool { return true }
	heading := "Options:\n"
	if c.runs {
		run := lookup("").flags()
		own = func(f *pflag.Flag) bool {
			r := run.Lookup(f.Name)
			return r == nil || r.Usage != f.Usage
		}
		heading = "Options of its own (the others are sse-latency's: sse-latency -h):\n"
	}
	b.WriteString("\n" + heading)
	writeFlags(&b, fs, own)
	if c.name == "" {
		b.WriteString(c.notes)
		writeCommands(&b)
	} else if c.notes != "" {
		b.WriteString("\n" + c.notes)
	}
	return b.String()
}

// writeCommands lists the subcommands of the table, for sse-latency -h.
func writeCommands(b *strings.Builder) {
	b.WriteString("\nCommands (sse-latency COMMAND -h: a command's usage and options):\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		if c.name != "" {
			fmt.Fprintf(b, "  %-*s  %s\n", width, c.name, c.summary)
		}
	}
}

// writeFlags writes the flags of fs that keep accepts, a line each (and
// more for a usage of several lines): "  -x, --name <placeholder>", then
// the usage, all its lines in one column, two spaces right of the longest
// flag. A usage that starts with "<"
// begins with the placeholder of the flag's value, up to the first space.
// A flag set without -h (pflag answers it itself) gets its line last.
func writeFlags(b *strings.Builder, fs *pflag.FlagSet, keep func(*pflag.Flag) bool) {
	type line struct{ left, usage string }
	var lines []line
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if !keep(f) {
			return
		}
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		usage := f.Usage
		if strings.HasPrefix(usage, "<") {
			ph, rest, _ := strings.Cut(usage, " ")
			left, usage = left+" "+ph, rest
		}
		lines = append(lines, line{left, usage})
	})
	if fs.Lookup("help") == nil {
		lines = append(lines, line{"  -h, --help", "help"})
	}
	for _, l := range lines {
		width = max(width, len(l.left))
	}
	for _, l := range lines {
		fmt.Fprintf(b, "%-*s  %s\n", width, l.left, strings.ReplaceAll(l.usage, "\n", "\n"+strings.Repeat(" ", width+2)))
	}
}
