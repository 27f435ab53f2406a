package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/store/pg"
)

const migrateHelp = `Usage: verdictbot migrate

Brings the state's schema up to date and exits, printing its version:
PostgreSQL when VERDICTBOT_DATABASE_URL is set (under the migration lock,
so it is safe while replicas start), else the embedded file in
VERDICTBOT_DATA_DIR. "verdictbot run" does the same at start; run this
alone before a rolling upgrade, or to check a database.
`

// runMigrate is `verdictbot migrate`.
func runMigrate(ctx context.Context, env environment, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		if args[0] == "help" {
			writeCommandHelp(stdout, env, findCLICommand("migrate"))
			return nil
		}
		return fmt.Errorf("%w: migrate takes no arguments, got %q (settings come from the environment)", errUsage, args)
	}
	cfg, err := loadValidConfig(env, false) // every problem at once
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		db, err := bolt.Open(cfg.DataDir, bolt.Options{})
		if err != nil {
			return err
		}
		if err := db.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: schema version %d\n", filepath.Join(cfg.DataDir, bolt.FileName), bolt.SchemaVersion)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	v, err := pg.Migrate(ctx, cfg.DatabaseURL.Reveal(), pg.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: schema version %d\n", pg.Describe(cfg.DatabaseURL.Reveal()), v)
	return nil
}
