package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/verdictbot/verdictbot/internal/bytesize"
	"github.com/verdictbot/verdictbot/store/bolt"

	"github.com/verdictbot/verdictbot/config"
)

// compactText is what compact does (verdictbot help compact).
const compactText = "Rewrites the store file with only its live records, to give back the space that\n" +
	"retention (VERDICTBOT_RETENTION) freed. Stop the bot first: the command refuses\n" +
	"while the file is open. The original is kept as " + bolt.FileName + ".precompact."

// newCompactFlags is compact's flag set (also printed by its help).
// env gives the flag's default (VERDICTBOT_DATA_DIR).
func newCompactFlags(env environment) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	dir := strings.TrimSpace(env.get("VERDICTBOT_DATA_DIR"))
	if dir == "" {
		dir = config.Default().DataDir
	}
	return fs, fs.String("data-dir", dir, "the data directory holding "+bolt.FileName+" (default: VERDICTBOT_DATA_DIR)")
}

// runCompact is "verdictbot compact": offline, it rewrites the store file
// of VERDICTBOT_DATA_DIR (or --data-dir) with only its live records. The
// file's lock makes it refuse while the bot runs.
func runCompact(env environment, args []string, stdout, stderr io.Writer) error {
	fs, dirFlag := newCompactFlags(env)
	fs.SetOutput(io.Discard) // Main prints the error and where help is
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandHelp(stderr, env, findCLICommand("compact"))
			return nil
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: compact takes no arguments but --data-dir, got %q", errUsage, fs.Args())
	}
	dir := *dirFlag
	st, err := bolt.Compact(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compacted %s: %s → %s in %s\nthe original is kept as %s: delete it once the bot runs fine on the compacted file\n",
		st.Path, bytesize.Format(st.Before), bytesize.Format(st.After), st.Took.Round(1e6), st.Backup)
	return nil
}
