// Package webhookdeliveries captures real webhook deliveries for the interop tests: its one test,
// run by interop/run.sh against a running modelexec, drives the webhooks domain over the same
// database and deployment secret as the server (so it signs with the very keys the server
// publishes at /.well-known/jwks.json), delivers a challenge, a registered-endpoint event and a
// per-request callback under both signature schemes to a TLS receiver on loopback, and writes
// what arrived (headers and exact body bytes) to a JSON file. interop/test/jose.test.mjs then
// verifies those deliveries with jose from npm using only the published JWKS, and the earlier
// HMAC scheme with node's crypto.
//
// Loopback receivers are reachable only through webhooks.AllowLoopbackForTests, which needs a
// test handle; that is why this is a test and not a command. Without INTEROP_DELIVERIES_OUT the
// test skips, so `go test ./...` passes without a server. It owns nothing else and is imported
// by nothing.
package webhookdeliveries
