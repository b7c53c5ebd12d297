// Package ratelimit owns pace (spec 02 "Rate-limit buckets", "Order of checks" steps 5-7): the
// plan table as data (Plans, Policy, the new-account multiplier, EgressCost), per-key GCRA token
// buckets behind the Limiter port with the in-process implementation Memory (the embedded
// default; the Redis one is ratelimit/redis), the per-instance Fuse, the Guard that drops the fuse
// to one request a second when the shared limiter keeps failing, and the rate headers.
//
// It must not import net/http (handlers or headers), database/sql or any store.
//
// # How the HTTP layer calls it
//
// Build one Admission per process: NewAdmission(limiter, AdmissionOptions{}), with limiter
// NewMemory(MemoryOptions{}) by default or redis.New(client, redis.Options{}) under --redis.
// Take now once per request and pass it to every call.
//
//  1. Step 5, after the key is found well formed and before it is looked up:
//     d, o := adm.CheckFuse(keyID, bucket, now). On OutcomeInstanceFuse answer 429 rate_limited,
//     reason instance_fuse, Retry-After: 1 (o.RetryAfterSeconds(d)), with Headers(d, now).
//  2. Step 6, after account status and key validity pass (account_banned, account_suspended,
//     account_limited, key_revoked, key_expired, invalid_api_key come first):
//     d, o, err := adm.Check(ctx, Request{Key: keyID, Plan: plan, AccountCreated: created,
//     Bucket: bucket, Cost: cost}, now). Cost is 1, or EgressCost(bytes) for egress.
//     Map o: OutcomeAdmitted goes on; OutcomePlanHasNoAPIGenerate → 403 plan_has_no_api_generate
//     (plan, bucket); OutcomeRequestTooLarge → 413 request_too_large (plan, bucket, limit =
//     d.Limit); OutcomeBucketSpent → 429 rate_limited (bucket, retry_after, reason bucket_spent)
//     with Retry-After o.RetryAfterSeconds(d); OutcomeUnavailable (err wraps ErrUnavailable) →
//     503 limiter_unavailable, Retry-After: 5; OutcomeInvalid (unknown plan or bucket) → 500
//     internal, logged. o.Status(), o.Code() and o.Reason() give these figures.
//  3. Step 7 (scope) comes after, so a plan or pace refusal wins over insufficient_scope.
//  4. Every response, refused or not, carries Headers(d, now) of the last admission. An asset
//     list is admitted twice (RL-09): steps 5-6 against read, then after the job lookup
//     adm.Admit(ctx, egressRequest, now) (fuse then limiter) with the size about to be signed; the
//     headers are the second admission's. Keyless routes (DESIGN decision 23) use adm.Admit with
//     Key "addr:<client address>", Plan free and Bucket read.
//
// # Rules
//
// Buckets refill continuously (GCRA: a bucket is the time at which it will be full again, stored
// with the time a token took to come back then, so it means tokens whatever the rate in force:
// what was spent counts once when the first 24 hours end or the plan changes, and a bucket is
// never more than empty).
// Decision.RetryAfter is exact from the bucket (the caller rounds up); Decision.ResetAfter is the
// time until full. A cost above the capacity in force is RequestTooLarge, never BucketSpent, and
// takes nothing; a capacity of 0 is PlanHasNoAPIGenerate, decided without any stored state. For
// the account's first 24 hours (Request.AccountCreated; zero means an old account) every burst is
// a fifth, floored at 1, and every refill five times slower; a zero stays zero. Egress is in
// megabytes of 10^6 bytes and the fuse counts egress requests, not megabytes (DESIGN decision
// 24). Figures the spec leaves open (the interactive bucket and its fuse) are documented at Plans
// and DefaultFuseLimits.
package ratelimit
