package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobs/redisnotify"
	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// notifier is how the processes over one PostgreSQL database tell each other of hand-offs, of
// jobs that started, progressed or settled, and of cancels: Redis pub/sub when --redis is
// given (it takes no database connection per process and puts no NOTIFY through the
// database's commits), else PostgreSQL's LISTEN/NOTIFY. A SQLite database serves one process,
// which needs none (nil). The closer releases what it opened (nil when nothing).
func (c Config) notifier(db *sqlstore.DB) (jobs.Notifier, func() error, error) {
	if db.Dialect() != sqlstore.Postgres {
		return nil, nil, nil
	}
	if c.Redis == "" {
		n, err := postgres.NewNotifier(db)
		return n, nil, err
	}
	opt, err := redis.ParseURL(c.Redis)
	if err != nil {
		return nil, nil, fmt.Errorf("--redis: %w", err)
	}
	// A client of its own: the limiter's fails fast, this one's subscription is held for as
	// long as the process runs and its publishes may wait a moment for a reconnect.
	opt.DialTimeout, opt.MaxRetries = time.Second, 2
	rdb := redis.NewClient(opt)
	return redisnotify.New(rdb, NoticeChannel(c.Secret)), rdb.Close, nil
}

// NoticeChannel is the Redis channel of a deployment's notices: named after its secret (which
// every process of it shares) by a one-way hash, so deployments sharing one Redis never hear
// each other and the channel's name gives nothing of the secret away.
func NoticeChannel(secret string) string {
	sum := sha256.Sum256([]byte("modelexec job notices\n" + secret))
	return "modelexec:jobs:" + hex.EncodeToString(sum[:8])
}
