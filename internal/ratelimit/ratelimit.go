package ratelimit

import (
	"context"
	"time"
)

// Bucket names a rate-limit bucket of spec 02 "Rate-limit buckets".
type Bucket string

const (
	Read        Bucket = "read"        // every GET
	Write       Bucket = "write"       // changes that cost no credits
	Generate    Bucket = "generate"    // anything reaching the credit ledger
	Egress      Bucket = "egress"      // asset downloads, whole megabytes (10^6 bytes), minimum 1
	Interactive Bucket = "interactive" // chat and language-model calls
)

// Refusal says why a request was not admitted; empty when it was.
type Refusal string

const (
	BucketSpent          Refusal = "bucket_spent"             // 429 rate_limited
	RequestTooLarge      Refusal = "request_too_large"        // 413: more than the bucket can ever hold
	PlanHasNoAPIGenerate Refusal = "plan_has_no_api_generate" // 403: capacity 0, never refills
	InstanceFuse         Refusal = "instance_fuse"            // 429 rate_limited: the per-instance fuse (Admission.CheckFuse only)
)

// Request asks to take Cost tokens from one key's bucket.
type Request struct {
	Key            string    // public key id
	Plan           string    // free, pro, max, ultimate
	AccountCreated time.Time // limits are x0.2 for the account's first 24 hours
	Bucket         Bucket
	Cost           int64 // 1 per request; megabytes for egress
	// Overdraw takes Cost even past empty, never refusing it for want of tokens or for its
	// size: for what is already paid for and must go out (a synchronous run's output). The
	// bucket runs into a debt it repays before it admits anything else.
	Overdraw bool
}

// Decision is the limiter's answer and the figures for the RateLimit-* headers.
type Decision struct {
	Allowed    bool
	Refusal    Refusal
	Limit      int64         // bucket capacity in force (burst, after the 24-hour multiplier)
	Remaining  int64         // tokens left after this admission
	ResetAfter time.Duration // until the bucket is full again
	RetryAfter time.Duration // when refused bucket_spent: until Cost tokens are available
}

// Limiter admits requests against shared buckets. An error means the limiter could not be
// reached (503 limiter_unavailable); a refusal is a Decision, never an error.
type Limiter interface {
	Admit(ctx context.Context, r Request) (Decision, error)
}
