package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"

	"github.com/pressly/goose/v3"
)

// Migrate applies a store's goose migrations (the .sql files of fsys's folder "migrations", in
// dialect d) to db, up to version (every one when 0). A schema newer than this binary's last
// migration is refused with a *SchemaError before anything runs: goose would skip the versions
// it does not know and leave a server running on tables it does not understand.
func Migrate(ctx context.Context, db *sql.DB, d goose.Dialect, fsys fs.FS, version int64) error {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		return err
	}
	have, want, err := schemaVersions(ctx, db, d, sub)
	if err != nil {
		return err
	}
	if have > want {
		return &SchemaError{Have: have, Want: want}
	}
	p, err := goose.NewProvider(d, db, sub)
	if err != nil {
		return fmt.Errorf("%s migrations: %w", d, err)
	}
	if version > 0 {
		_, err = p.UpTo(ctx, version)
	} else {
		_, err = p.Up(ctx)
	}
	if err != nil {
		return fmt.Errorf("%s: migrate: %w", d, err)
	}
	return nil
}

// CheckSchema is what opening a store for a console command does instead of migrating it (only
// migrate and serve apply migrations): it reads the version goose recorded in db and fails with
// a *SchemaError unless it is the last of fsys's folder "migrations". It changes nothing.
func CheckSchema(ctx context.Context, db *sql.DB, d goose.Dialect, fsys fs.FS) error {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		return err
	}
	return checkSchema(ctx, db, d, sub)
}

// SchemaError says that a database's schema is not the one this binary needs: none at all
// (Have 0), an older one (migrate it) or a newer one (a newer binary migrated it).
type SchemaError struct {
	Have, Want int64
}

func (e *SchemaError) Error() string {
	switch {
	case e.Have == 0:
		return "it has no modelexec schema (run modelexec migrate first)"
	case e.Have < e.Want:
		return fmt.Sprintf("the schema is at version %d and this binary needs %d: run modelexec migrate", e.Have, e.Want)
	default:
		return fmt.Sprintf("the schema is at version %d, newer than this binary's %d: use the modelexec release that migrated it", e.Have, e.Want)
	}
}

// checkSchema compares the version goose recorded in db (0 when it recorded none) with the
// last migration of migrations, reading only.
func checkSchema(ctx context.Context, db *sql.DB, d goose.Dialect, migrations fs.FS) error {
	have, want, err := schemaVersions(ctx, db, d, migrations)
	if err != nil {
		return err
	}
	if have != want {
		return &SchemaError{Have: have, Want: want}
	}
	return nil
}

// schemaVersions reads the highest version goose recorded in db (have, 0 when it recorded
// none) and the last migration of migrations (want), changing nothing.
func schemaVersions(ctx context.Context, db *sql.DB, d goose.Dialect, migrations fs.FS) (have, want int64, err error) {
	names, err := fs.Glob(migrations, "*.sql")
	if err != nil {
		return 0, 0, err
	}
	for _, name := range names {
		v, err := goose.NumericComponent(path.Base(name))
		if err != nil {
			return 0, 0, fmt.Errorf("%s migrations: %w", d, err)
		}
		want = max(want, v)
	}
	exists := `SELECT to_regclass('goose_db_version') IS NOT NULL`
	if d == goose.DialectSQLite3 {
		exists = `SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'`
	}
	var has bool
	if err := db.QueryRowContext(ctx, exists).Scan(&has); err != nil {
		return 0, 0, fmt.Errorf("%s: reading the schema version: %w", d, err)
	}
	if has {
		var v sql.NullInt64
		if err := db.QueryRowContext(ctx, `SELECT MAX(version_id) FROM goose_db_version`).Scan(&v); err != nil {
			return 0, 0, fmt.Errorf("%s: reading the schema version: %w", d, err)
		}
		have = v.Int64
	}
	return have, want, nil
}
