package pg

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrations are embedded SQL files run by goose (pressly/goose v3): a
// well-kept library that reads an embed.FS, records the versions it applied
// in goose_db_version, and takes a PostgreSQL advisory lock for the run
// (its session locker), so replicas that start together migrate once.
//
//go:embed migrations/*.sql
var migrationsFS embed.FS

// SchemaVersion is the newest schema this code knows: the number of the
// last file in migrations/.
const SchemaVersion = 16

// NewerSchemaError is returned for a database migrated by a newer verdictbot.
type NewerSchemaError struct{ Database, Binary int64 }

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("database schema %d is newer than this verdictbot (%d); upgrade verdictbot", e.Database, e.Binary)
}

// dbVersion returns the schema version the database is at (0: none).
func (db *DB) dbVersion(ctx context.Context) (int64, error) {
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int64
	err := db.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&v)
	return v, err
}

func (db *DB) migrate(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*db.timeout)
	defer cancel()
	if v, err := db.dbVersion(ctx); err != nil {
		return 0, db.wrap("postgres: reading the schema version", err)
	} else if v > SchemaVersion {
		return v, &NewerSchemaError{v, SchemaVersion}
	}
	if err := db.migrateUpTo(ctx, goose.MaxVersion); err != nil {
		return 0, err
	}
	v, err := db.dbVersion(ctx)
	if err != nil {
		return 0, db.wrap("postgres: reading the schema version", err)
	}
	if v > SchemaVersion {
		return v, &NewerSchemaError{v, SchemaVersion}
	}
	return v, nil
}

// migrateUpTo applies the embedded migrations up to version (goose.MaxVersion:
// all of them) under the migration lock.
func (db *DB) migrateUpTo(ctx context.Context, version int64) error {
	var database, schema string
	if err := db.pool.QueryRow(ctx, `SELECT current_database(), COALESCE(current_schema(), '')`).Scan(&database, &schema); err != nil {
		return db.wrap("postgres", err)
	}
	if schema == "" {
		return fmt.Errorf("postgres: no schema to create the tables in (check search_path)")
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(database, schema)), lock.WithLockTimeout(1, 300))
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrationsFS, "migrations")
	if err != nil {
		return err
	}
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, sub,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return db.wrap("postgres: migrating the schema", err)
	}
	return nil
}
