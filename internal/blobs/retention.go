package blobs

import (
	"context"
	"log/slog"
	"time"
)

// Retention is how long stored files are kept after they were written; 0 keeps them forever.
// Jobs and ledger entries are kept whatever it says: only the bytes go.
type Retention struct {
	Outputs time.Duration // a job's output files (outputs/…)
	Uploads time.Duration // uploaded files (uploads/…)
}

// The retention as shipped (serve's --retain-outputs and --retain-uploads).
const (
	DefaultRetainOutputs = 30 * 24 * time.Hour
	DefaultRetainUploads = 7 * 24 * time.Hour
)

// SweepEvery is how often a Sweeper deletes what its retention no longer keeps.
const SweepEvery = time.Hour

// Sweeper deletes stored files older than their retention, on whichever backend the bucket
// is (local files or S3). Several processes may sweep one bucket: a file deleted by another
// is skipped.
type Sweeper struct {
	Bucket    *Bucket
	Retention Retention
	Every     time.Duration    // SweepEvery when 0
	Now       func() time.Time // time.Now when nil
	Log       *slog.Logger
}

// Run sweeps at once and then every Every, until ctx ends.
func (s *Sweeper) Run(ctx context.Context) error {
	every := s.Every
	if every <= 0 {
		every = SweepEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("blob retention sweep failed; it runs again later", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Sweep deletes the outputs and uploads older than their retention and returns how many.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	total := 0
	for _, r := range []struct {
		prefix string
		keep   time.Duration
	}{{"outputs/", s.Retention.Outputs}, {"uploads/", s.Retention.Uploads}} {
		if r.keep <= 0 {
			continue
		}
		n, err := s.Bucket.DeleteOlder(ctx, r.prefix, now.Add(-r.keep))
		total += n
		if err != nil {
			return total, err
		}
		if n > 0 {
			s.Log.Info("blob retention swept", "prefix", r.prefix, "deleted", n, "kept_for", r.keep.String())
		}
	}
	return total, nil
}
