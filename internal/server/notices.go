package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobs/redisnotify"
	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/studio"
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

// studioChanged is the notice of a studio document stored at a new revision by some process.
const studioChanged jobs.NoticeKind = "studio"

// studioNotice is the key of studioChanged: the document's account, project and doc, each
// escaped, and the revision stored.
func studioNotice(k studio.Key, rev int64) string {
	return url.PathEscape(k.Account) + "/" + url.PathEscape(k.Project) + "/" + url.PathEscape(string(k.Doc)) + "/" + strconv.FormatInt(rev, 10)
}

// studioHeard reads a studioChanged key back; ok is false for anything else.
func studioHeard(key string) (k studio.Key, rev int64, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 4 {
		return studio.Key{}, 0, false
	}
	var err error
	var p [3]string
	for i := range p {
		if p[i], err = url.PathUnescape(parts[i]); err != nil {
			return studio.Key{}, 0, false
		}
	}
	if rev, err = strconv.ParseInt(parts[3], 10, 64); err != nil {
		return studio.Key{}, 0, false
	}
	return studio.Key{Account: p[0], Project: p[1], Doc: studio.Name(p[2])}, rev, true
}

// studioAware is the notice of an awareness update (cursors, names) a live peer of some
// process sent, or of the states a process's peers announce, answering studioAsk.
const studioAware jobs.NoticeKind = "studio-aware"

// studioAsk is the notice of a process whose first live peer of a document joined: the
// processes with peers of it answer with the states those announce (studioAware).
const studioAsk jobs.NoticeKind = "studio-aware-ask"

// studioAwareNotice is the key of studioAware: the sending process, the document as in
// studioNotice, and the update in unpadded base64url. A notice longer than the notifier's
// payload (32 KiB through Redis, 7,000 bytes through PostgreSQL: an update of about 24 KB or
// 5 KB) is dropped: its states then reach the peers of the sender's process only.
func studioAwareNotice(from string, k studio.Key, update []byte) string {
	return studioAskNotice(from, k) + "/" + base64.RawURLEncoding.EncodeToString(update)
}

// studioAwareHeard reads a studioAware key back; ok is false for anything else.
func studioAwareHeard(key string) (from string, k studio.Key, update []byte, ok bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", studio.Key{}, nil, false
	}
	if from, k, ok = studioAskHeard(key[:i]); !ok {
		return "", studio.Key{}, nil, false
	}
	update, err := base64.RawURLEncoding.DecodeString(key[i+1:])
	if err != nil {
		return "", studio.Key{}, nil, false
	}
	return from, k, update, true
}

// studioAskNotice is the key of studioAsk: the asking process and the document as in
// studioNotice.
func studioAskNotice(from string, k studio.Key) string {
	return from + "/" + url.PathEscape(k.Account) + "/" + url.PathEscape(k.Project) + "/" + url.PathEscape(string(k.Doc))
}

// studioAskHeard reads a studioAsk key back; ok is false for anything else.
func studioAskHeard(key string) (from string, k studio.Key, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 4 {
		return "", studio.Key{}, false
	}
	var err error
	var p [3]string
	for i := range p {
		if p[i], err = url.PathUnescape(parts[i+1]); err != nil {
			return "", studio.Key{}, false
		}
	}
	return parts[0], studio.Key{Account: p[0], Project: p[1], Doc: studio.Name(p[2])}, true
}

// studioFanOut carries the studio edits and awareness of every process to the live peers of
// every other, through the notifier, by setting cfg's callbacks: what a process stores is told
// (Changed), and what any process told brings this one's rooms up to date (Heard); what a peer
// announces is told (Aware) and relayed by the others (HeardAwareness), not by its own; a room
// that opens asks (AskAwareness) and the processes with peers of its document answer with
// their states (AnswerAwareness), which reach it as any others. listen hears the others.
func studioFanOut(n jobs.Notifier, cfg *studio.Config, svc func() *studio.Service, log *slog.Logger) (listen func(context.Context) error) {
	self := rand.Text()
	cfg.Changed = func(k studio.Key, rev int64) { n.Notify(jobs.Notice{Kind: studioChanged, Key: studioNotice(k, rev)}) }
	cfg.Aware = func(k studio.Key, u []byte) {
		n.Notify(jobs.Notice{Kind: studioAware, Key: studioAwareNotice(self, k, u)})
	}
	cfg.AskAwareness = func(k studio.Key) { n.Notify(jobs.Notice{Kind: studioAsk, Key: studioAskNotice(self, k)}) }
	heard := func(ctx context.Context) func(jobs.Notice) {
		return func(x jobs.Notice) {
			switch x.Kind {
			case studioChanged:
				k, rev, ok := studioHeard(x.Key)
				if !ok {
					return
				}
				if err := svc().Heard(ctx, k, rev); err != nil {
					log.Warn("studio: a change on another process did not reach this one's live peers", "project", k.Project, "doc", k.Doc, "err", err)
				}
			case studioAware:
				if from, k, u, ok := studioAwareHeard(x.Key); ok && from != self {
					svc().HeardAwareness(k, u)
				}
			case studioAsk:
				if from, k, ok := studioAskHeard(x.Key); ok && from != self {
					svc().AnswerAwareness(k)
				}
			}
		}
	}
	listen = func(ctx context.Context) error {
		for {
			err := n.Listen(ctx, heard(ctx))
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("studio: notices from other processes interrupted", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
	return listen
}
