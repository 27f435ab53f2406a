package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/verdictbot/verdictbot/internal/bytesize"
	"github.com/verdictbot/verdictbot/store"
)

// runCompact is "verdictbot compact": offline, it rewrites the store file
// of VERDICTBOT_DATA_DIR (or --data-dir) with only its live records. The
// file's lock makes it refuse while the bot runs.
func runCompact(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := os.Getenv("VERDICTBOT_DATA_DIR")
	if dir == "" {
		dir = defaultConfig().DataDir
	}
	fs.StringVar(&dir, "data-dir", dir, "the data directory holding "+store.FileName+" (default: VERDICTBOT_DATA_DIR)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: verdictbot compact [--data-dir DIR]\n\n"+
			"Rewrites the store file with only its live records, to give back the space that\n"+
			"retention (VERDICTBOT_RETENTION) freed. Stop the bot first: the command refuses\n"+
			"while the file is open. The original is kept as %s.precompact.\n\n", store.FileName)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return errUsage
	}
	st, err := store.Compact(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compacted %s: %s → %s in %s\nthe original is kept as %s: delete it once the bot runs fine on the compacted file\n",
		st.Path, bytesize.Format(st.Before), bytesize.Format(st.After), st.Took.Round(1e6), st.Backup)
	return nil
}
