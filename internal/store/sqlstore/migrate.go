package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// Migrate applies a store's goose migrations (the .sql files of fsys's folder "migrations", in
// dialect d) to db, up to version (every one when 0).
func Migrate(ctx context.Context, db *sql.DB, d goose.Dialect, fsys fs.FS, version int64) error {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		return err
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
