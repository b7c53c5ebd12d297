package httpapi

import "github.com/modelexec/modelexec/internal/ratelimit"

// RateRecorder is told of each request a rate-limit bucket refused (the instance fuse and a
// spent bucket alike), by bucket. The process's metrics implement it.
type RateRecorder interface {
	RateLimited(bucket string)
}

// limited reports a refusal by bucket when the gate has a recorder.
func (g *Gate) limited(b ratelimit.Bucket) {
	if g.Metrics != nil {
		g.Metrics.RateLimited(string(b))
	}
}

// name is the surface as the access log names it.
func (s Surface) name() string {
	switch s {
	case QueueSurface:
		return "queue"
	case SyncSurface:
		return "sync"
	case ConsoleSurface:
		return "console"
	}
	return "api"
}
