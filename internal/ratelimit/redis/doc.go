// Package redis is the shared implementation of the ratelimit.Limiter port (`--redis`): GCRA
// buckets in Redis, one key per public key id and bucket, taken from atomically by one Lua
// script that reads the time from the Redis server (TIME), so any number of modelexec processes
// sharing one Redis enforce one budget per key.
//
// It owns the Redis key layout (<prefix>{<key id>}:<bucket>) and the script; the plan table, the
// new-account multiplier and the refusals decided without state come from package ratelimit
// (ratelimit.Resolve), so both implementations agree, and the suite in ratelimit/ratelimittest
// proves it against miniredis and, with MODELEXEC_TEST_REDIS, a real Redis.
//
// Errors are returned, never hidden: the caller wraps the limiter in a ratelimit.Guard (through
// ratelimit.Admission), which answers 503 limiter_unavailable and trips the fuse when Redis
// keeps failing.
//
// Why an own script rather than go-redis/redis_rate/v10 (pinned, and the same GCRA): the port
// needs a refusal distinct from bucket_spent for a cost above the burst (redis_rate only answers
// "not allowed, retry -1"), a read of the bucket that takes nothing (for request_too_large's
// headers), and exact figures (redis_rate works in float seconds since 2017; this script in
// integer microseconds of TIME, matching ratelimit.GCRA, so the suite can demand equal answers
// from both implementations). The script is twenty lines; its arithmetic is tested by the suite.
//
// It must not import net/http handlers, database/sql or any store.
package redis
