package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/verdictbot/verdictbot/doctor"
)

// doctorText is what doctor does (verdictbot help doctor adds the usage
// line, the flags and the settings).
const doctorText = `Checks an install, from the settings "verdictbot run" reads, and prints a checklist:
one line per check (✓ passed, ✗ failed, ! warning, - not configured), with a
"fix:" line under each failure and warning. Run it after installing, and after
changing a setting:
  - Slack: the bot token (auth.test), the scopes Slack granted against those of
    the manifest.yaml built into this binary, Socket Mode (apps.connections.open
    and the WebSocket up to Slack's hello, closed at once; both tokens of one
    app), and the optional admin token (a workspace admin's, its user scopes);
  - the services: a status of a task that does not exist, authenticated by the
    key ("task not found" proves the key was accepted), and their rate-limit
    headers if they send any;
  - the state: VERDICTBOT_DATA_DIR writable; PostgreSQL reachable, its schema
    version and its replicas (read only, never migrated), or the store file's
    schema (opened read-only; a running bot's is left alone);
  - the events: VERDICTBOT_EVENTS_URL reachable (HEAD), with --send-test-event
    one signed test event answered 2xx; VERDICTBOT_EVENTS_FILE writable;
  - the settings that name users, a user group and channels: each exists
    (users.info, usergroups.users.list, conversations.info), and the bot is
    in VERDICTBOT_ALERT_CHANNEL and VERDICTBOT_REPORT_CHANNEL.
Nothing is changed but a probe file, created and removed in the data directory
(and, with --send-test-event, the receiver's one event); no token, key or
password is printed.

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 for
a usage error.
`

// doctorFlags are the values of doctor's flags.
type doctorFlags struct {
	asJSON, sendTestEvent *bool
	timeout               *time.Duration
}

// newDoctorFlags is doctor's flag set (also printed by its help).
func newDoctorFlags() (*flag.FlagSet, doctorFlags) {
	fs := flag.NewFlagSet("verdictbot doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Main prints the error and where help is
	fs.Usage = func() {}
	return fs, doctorFlags{
		asJSON:        fs.Bool("json", false, "print the checks as one JSON object (ok, counts, checks) instead of the checklist"),
		sendTestEvent: fs.Bool("send-test-event", false, "post one signed test event to VERDICTBOT_EVENTS_URL and require a 2xx answer"),
		timeout:       fs.Duration("timeout", doctor.DefaultTimeout, "how long each network call may take"),
	}
}

// runDoctor is `verdictbot doctor`: it loads the settings as run does
// (every problem is the first check's), runs the checks and prints the
// checklist (or JSON). It fails when a check failed.
func runDoctor(ctx context.Context, env environment, args []string, stdout, stderr io.Writer) error {
	fs, f := newDoctorFlags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) { // Main answers -h; this is for direct callers
			writeCommandHelp(stderr, env, findCLICommand("doctor"))
			return nil
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: doctor takes no arguments but its flags, got %q (settings come from the environment)", errUsage, fs.Args())
	case *f.timeout <= 0:
		return fmt.Errorf("%w: --timeout must be positive", errUsage)
	}
	cfg, problems := loadValidConfig(env, true)
	rep := doctor.Run(ctx, cfg, doctor.Options{Timeout: *f.timeout, SendTestEvent: *f.sendTestEvent, Version: version,
		Problems: problems})
	var err error
	if *f.asJSON {
		err = doctor.WriteJSON(stdout, rep)
	} else {
		err = doctor.WriteText(stdout, rep)
	}
	if err != nil {
		return err
	}
	if n := rep.Count(doctor.Fail); n > 0 {
		return fmt.Errorf("%d of %d checks failed", n, len(rep.Results))
	}
	return nil
}
