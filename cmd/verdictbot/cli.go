package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/shell"
)

// cliCommand is one subcommand of verdictbot, as `verdictbot help` lists
// it and `verdictbot help CMD` / `verdictbot CMD -h` describe it: usage,
// what it does, its flags and the settings (environment variables) it reads.
type cliCommand struct {
	name     string
	synopsis string // after "Usage: "
	summary  string // one line for the list
	text     string // what it does
	// flags returns the command's real flag set, its defaults read from
	// env (nil: it takes none).
	flags func(env environment) *flag.FlagSet
	// settings are the environment variables it reads.
	settings func() []string
	// settingsNote follows the settings.
	settingsNote string
	// help, when set, writes the usage, text and flags instead (the
	// shell's, which its own flag parser prints).
	help func(w io.Writer)
}

// cliCommands is every subcommand, in the order `verdictbot help` lists
// them; Main dispatches on the same names.
var cliCommands = []*cliCommand{
	{name: "run", synopsis: "verdictbot run",
		summary: "connect to Slack over Socket Mode and serve (settings from the environment)",
		text: "Connects to Slack with SLACK_BOT_TOKEN and SLACK_APP_TOKEN over Socket Mode, scans the links and\n" +
			"files shared in the channels it is in, and serves until SIGINT or SIGTERM (a second signal\n" +
			"exits at once). Every setting comes from the environment: an unset or empty variable keeps\n" +
			"its default, and every wrong setting is reported at start, one line each.\n" +
			"\"verdictbot config\" shows the effective settings; docs/configuration.md explains them.",
		settings: config.Names},
	{name: "shell", synopsis: "verdictbot shell [--sim-profile demo|quick] [--wait 60s]",
		summary: "chat with the bot in the terminal, no Slack needed (built-in simulator of the services)",
		help: func(w io.Writer) {
			_, _ = shell.ParseFlags([]string{"-h"}, w)
		},
		settings: func() []string {
			return []string{"REPUTATION_URL", "REPUTATION_API_KEY", "SANDBOX_URL", "SANDBOX_API_KEY", "VERDICTBOT_DATA_DIR", "NO_COLOR"}
		},
		settingsNote: "The other settings keep their defaults in the shell, the channel mode included (quiet: `mode verbose` shows a card for every link)."},
	{name: "check", synopsis: "verdictbot check [--json] [--sim] [--timeout d] <url|file>…",
		summary: "scan links and files once, for scripts and CI (exit 0 clean, 1 suspicious, 2 malicious, 3 could not check, 4 usage)",
		text:    checkUsage,
		flags:   func(environment) *flag.FlagSet { fs, _ := newCheckFlags(); return fs },
		settings: func() []string {
			var out []string
			for _, s := range config.Names() {
				if !strings.HasPrefix(s, "SLACK_") {
					out = append(out, s)
				}
			}
			return out
		}},
	{name: "sim", synopsis: "verdictbot sim [--addr 127.0.0.1:8099] [flags]",
		summary: "serve a simulator of both analysis services (for trying the bot and for tests)",
		text: "Serves a simulator of the URL reputation service and the sandbox on one address until\n" +
			"SIGINT or SIGTERM, and prints the settings that point the bot at it as its first line:\n" +
			"REPUTATION_URL=http://… SANDBOX_URL=http://… (any non-empty API key is accepted unless --keys).\n" +
			"The flags choose its speed, its limits and the faults it injects.",
		flags: func(environment) *flag.FlagSet { fs, _ := newSimFlags(); return fs }},
	{name: "migrate", synopsis: "verdictbot migrate",
		summary: "bring the state's schema up to date and exit (PostgreSQL, or the embedded file)",
		text:    strings.TrimPrefix(strings.TrimSpace(migrateHelp), "Usage: verdictbot migrate\n\n"),
		settings: func() []string {
			return []string{"VERDICTBOT_DATABASE_URL", "VERDICTBOT_DATA_DIR"}
		},
		settingsNote: "It checks the other settings as run does (but the Slack ones), and refuses to start on a wrong one."},
	{name: "compact", synopsis: "verdictbot compact [--data-dir DIR]",
		summary: "shrink the store file to its live records (offline: stop the bot first)",
		text:    compactText,
		flags:   func(env environment) *flag.FlagSet { fs, _ := newCompactFlags(env); return fs },
		settings: func() []string {
			return []string{"VERDICTBOT_DATA_DIR"}
		}},
	{name: "events", synopsis: "verdictbot events list [--limit N] | retry SEQ… | retry --all",
		summary: "show the events the SOC's receiver refused (dead letters) and queue them again",
		text:    eventsText,
		flags:   func(environment) *flag.FlagSet { fs, _, _ := newEventsFlags(); return fs },
		settings: func() []string {
			return []string{"VERDICTBOT_DATABASE_URL", "VERDICTBOT_DATA_DIR", "VERDICTBOT_EVENTS_MAX_QUEUED"}
		},
		settingsNote: "It checks the other settings as run does (but the Slack ones), and refuses to start on a wrong one."},
	{name: "healthcheck", synopsis: "verdictbot healthcheck [addr]",
		summary: "exit 0 if the bot's /healthz answers (for container health checks)",
		text: "Asks http://ADDR/healthz of a running bot and exits 0 if it answers 200 (\"healthy\"), 1 otherwise,\n" +
			"within 3 s. ADDR is the argument, else VERDICTBOT_HTTP_ADDR (default 127.0.0.1:8080); a wildcard\n" +
			"host (0.0.0.0, ::) is asked on 127.0.0.1.",
		settings: func() []string { return []string{"VERDICTBOT_HTTP_ADDR"} }},
	{name: "config", synopsis: "verdictbot config",
		summary: "print the effective configuration (every setting, its value and where it comes from; secrets masked)",
		text: "Prints every setting the bot reads, its effective value and where it comes from (default or\n" +
			"environment), with tokens, API keys and the database password masked. Then checks them as\n" +
			"\"verdictbot run\" would: it exits 1 listing every wrong setting, one line each, or 0.",
		settings: config.Names},
	{name: "doctor", synopsis: "verdictbot doctor [--json] [--send-test-event] [--timeout 10s]",
		summary:      "check an install: Slack tokens and scopes, the services, the state, the events, the ids in the settings (a checklist with fixes)",
		text:         doctorText,
		flags:        func(environment) *flag.FlagSet { fs, _ := newDoctorFlags(); return fs },
		settings:     config.Names,
		settingsNote: "It reads the settings as run does; a wrong one is the first check's failure, and the other checks use the rest."},
	{name: "version", synopsis: "verdictbot version", summary: "print the version, commit and build date",
		text: "Prints the release's version, the commit it was built from, when it was built, and the Go\n" +
			"toolchain and platform, on one line. A build from source without the release's linker flags\n" +
			"says what Go recorded: the module version (go install …@v1.2.3), the commit and its time\n" +
			"when built in a git checkout, or dev and unknown."},
	{name: "help", synopsis: "verdictbot help [command]", summary: "list the commands, or describe one",
		text: "Lists the commands, or prints a command's usage, flags and settings (as \"verdictbot COMMAND -h\")."},
}

func findCLICommand(name string) *cliCommand {
	for _, c := range cliCommands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// writeUsage writes the list of commands (`verdictbot help`).
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "verdictbot scans links and files shared in Slack channels.\n\nUsage: verdictbot COMMAND [flags] [arguments]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cliCommands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, "\nRun \"verdictbot help COMMAND\" (or \"verdictbot COMMAND -h\") for its usage, flags and settings.\n")
}

// writeCommandHelp writes a command's help: usage, what it does, flags
// (their defaults as env gives them), settings.
func writeCommandHelp(w io.Writer, env environment, c *cliCommand) {
	if c.help != nil {
		c.help(w)
	} else {
		fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.synopsis, strings.TrimRight(c.text, "\n"))
		if c.flags != nil {
			fs := c.flags(env)
			fmt.Fprint(w, "\nFlags:\n")
			fs.SetOutput(w)
			fs.PrintDefaults()
		}
	}
	if c.settings == nil {
		fmt.Fprint(w, "\nSettings: none (it reads no environment variable).\n")
		return
	}
	fmt.Fprint(w, "\nSettings (environment variables; unset or empty keeps the default; \"verdictbot config\" shows them):\n")
	defaults := config.Default().Values()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range c.settings() {
		def, ok := defaults[s]
		switch {
		case !ok:
			fmt.Fprintf(tw, "  %s\t\n", s)
		case def == "" && requiredForRun(s):
			fmt.Fprintf(tw, "  %s\trequired by run\n", s)
		case def == "":
			fmt.Fprintf(tw, "  %s\tunset by default\n", s)
		default:
			fmt.Fprintf(tw, "  %s\tdefault %s\n", s, def)
		}
	}
	tw.Flush()
	if c.settingsNote != "" {
		fmt.Fprintln(w, c.settingsNote)
	}
}

// wantsHelp reports whether args ask for help (-h, -help or --help
// before a "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// unknownCommand is the error for a command verdictbot does not have.
func unknownCommand(name string) string {
	msg := fmt.Sprintf("verdictbot: unknown command %q", name)
	names := make([]string, 0, len(cliCommands))
	for _, c := range cliCommands {
		names = append(names, c.name)
	}
	if best := config.Nearest(name, names, 2); best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return msg + "; the commands are " + strings.Join(names, ", ") + " (verdictbot help lists them)\n"
}

// requiredForRun reports whether `run` refuses to start without name.
func requiredForRun(name string) bool {
	switch name {
	case "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "REPUTATION_URL", "REPUTATION_API_KEY":
		return true
	}
	return false
}
