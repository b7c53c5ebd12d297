package jobs

import (
	"context"
	"strings"
	"sync"
)

// NoticeQueue is the part every Notifier shares: the notices this process gave, waiting to be
// sent, packed into payloads of one notice a line ("kind key"), so the notices of one moment
// go in one message, not one each.
type NoticeQueue struct {
	max int // bytes a payload holds at most

	mu      sync.Mutex
	pending []Notice
	wake    chan struct{}
}

// maxPendingNotices bounds the notices waiting to be sent; past it the oldest are dropped
// (each process's sweep and its waiters' polls find what a lost notice would have told).
const maxPendingNotices = 10000

// NewNoticeQueue answers a queue whose payloads hold at most maxPayload bytes.
func NewNoticeQueue(maxPayload int) *NoticeQueue {
	return &NoticeQueue{max: maxPayload, wake: make(chan struct{}, 1)}
}

// Add queues x for the next payload.
func (q *NoticeQueue) Add(x Notice) {
	q.mu.Lock()
	if len(q.pending) >= maxPendingNotices {
		q.pending = q.pending[1:]
	}
	q.pending = append(q.pending, x)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Send hands the waiting notices to publish, a payload at a time, whenever some wait, until
// ctx ends. A payload publish refuses is lost with the rest of its round; the sweep and the
// polls cover them.
func (q *NoticeQueue) Send(ctx context.Context, publish func(ctx context.Context, payload string) error) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for payload := q.take(); payload != ""; payload = q.take() {
			if publish(ctx, payload) != nil {
				break
			}
		}
	}
}

// take removes the waiting notices that fit in one payload and answers it; a notice longer
// than a payload is dropped, and those after it go on.
func (q *NoticeQueue) take() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b strings.Builder
	i := 0
	for ; i < len(q.pending); i++ {
		line := string(q.pending[i].Kind) + " " + q.pending[i].Key
		if len(line) > q.max {
			continue
		}
		if b.Len() > 0 && b.Len()+1+len(line) > q.max {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	q.pending = q.pending[i:]
	return b.String()
}

// ReadNotices calls fn with each notice of a payload.
func ReadNotices(payload string, fn func(Notice)) {
	for _, line := range strings.Split(payload, "\n") {
		if kind, key, ok := strings.Cut(line, " "); ok {
			fn(Notice{Kind: NoticeKind(kind), Key: key})
		}
	}
}
