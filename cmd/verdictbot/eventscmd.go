package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/verdictbot/verdictbot/events/deadletter"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg"

	"github.com/verdictbot/verdictbot/config"
)

// eventsText is what `verdictbot events` does (verdictbot help events).
const eventsText = `Shows and resends the findings the events receiver (VERDICTBOT_EVENTS_URL) refused: an event
it refuses 20 times in a row (a 4xx such as 400, 413 or 422) is set aside on a dead-letter list,
so that the events after it are delivered; it stays there until it is queued again.

  verdictbot events list [--limit N]   how many events are queued, and the dead letters, oldest first
  verdictbot events retry SEQ…         queue these dead letters again
  verdictbot events retry --all        queue every dead letter again

A dead letter queued again goes to the end of the queue under a new sequence number (the
event's metadata.uid is unchanged) and is sent after the events queued before it; fix the
receiver first, or it is refused 20 times again. With VERDICTBOT_DATABASE_URL it works on the
shared database while the replicas run; with the embedded file (VERDICTBOT_DATA_DIR) stop the
bot first: the file is opened by one process at a time.`

// newEventsFlags is the flag set of events' subcommands (also printed by
// its help).
func newEventsFlags() (*flag.FlagSet, *int, *bool) {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	limit := fs.Int("limit", 100, "list: show at most this many dead letters")
	all := fs.Bool("all", false, "retry: queue every dead letter again")
	return fs, limit, all
}

// runEventsCmd is `verdictbot events list|retry`.
func runEventsCmd(ctx context.Context, env environment, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: events takes a subcommand: list or retry", errUsage)
	}
	sub := args[0]
	if sub != "list" && sub != "retry" {
		return fmt.Errorf("%w: unknown subcommand %q: want list or retry", errUsage, sub)
	}
	fs, limit, all := newEventsFlags()
	fs.SetOutput(io.Discard) // Main prints the error and where help is
	fs.Usage = func() {}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandHelp(stderr, env, findCLICommand("events"))
			return nil
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var seqs []uint64
	switch {
	case sub == "list" && (fs.NArg() > 0 || *all):
		return fmt.Errorf("%w: events list takes no arguments but --limit", errUsage)
	case sub == "list" && *limit < 1:
		return fmt.Errorf("%w: --limit %d: want at least 1", errUsage, *limit)
	case sub == "retry" && *all && fs.NArg() > 0:
		return fmt.Errorf("%w: events retry takes sequence numbers or --all, not both", errUsage)
	case sub == "retry" && !*all && fs.NArg() == 0:
		return fmt.Errorf("%w: events retry needs the sequence numbers of the dead letters (events list shows them), or --all", errUsage)
	}
	seen := map[uint64]bool{}
	for _, a := range fs.Args() {
		n, err := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("%w: %q is not a sequence number (events list shows them)", errUsage, a)
		}
		if !seen[n] {
			seqs = append(seqs, n)
			seen[n] = true
		}
	}
	cfg, err := loadValidConfig(env, false) // every problem at once
	if err != nil {
		return err
	}
	db, err := openEventsState(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if sub == "list" {
		return deadletter.List(db, *limit, stdout)
	}
	return deadletter.Retry(db, seqs, cfg.EventsMaxQueued, stdout)
}

// eventsState is what the events command needs of the state layer.
type eventsState interface {
	store.EventQueue
	Close() error
}

// openEventsState opens the state the bot uses: PostgreSQL (its schema
// migrated, as run does) or the embedded file, which must exist (an empty
// one is not created in a wrong directory) and not be open in a bot.
func openEventsState(ctx context.Context, cfg config.Config) (eventsState, error) {
	if cfg.DatabaseURL != "" {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		return pg.Open(ctx, cfg.DatabaseURL.Reveal(), pg.Options{})
	}
	path := filepath.Join(cfg.DataDir, bolt.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no store at %s (VERDICTBOT_DATA_DIR=%s): nothing was ever queued there", path, cfg.DataDir)
	}
	db, err := bolt.Open(cfg.DataDir, bolt.Options{})
	if err != nil && strings.Contains(err.Error(), "locked by another process") {
		return nil, fmt.Errorf("%w; with the embedded file, stop the bot first", err)
	}
	return db, err
}
