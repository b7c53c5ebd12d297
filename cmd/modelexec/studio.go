package main

import (
	"log/slog"
	"time"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/studio"
)

// newStudio is the studio document service over the database: every process merging into a
// document compares and swaps on its revision, so any number of `serve` processes agree.
func newStudio(db *sqlstore.DB, now func() time.Time, log *slog.Logger) *studio.Service {
	return studio.NewService(studio.Config{Store: sqlstore.Studio{DB: db}, Now: now, Log: log})
}
