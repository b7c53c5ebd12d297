// Package webhooks owns how users are told about settled jobs: registered endpoints and their
// states (pending, active, disabled, dead), the registration challenge, per-request callbacks,
// the event envelopes of spec 02 "Events", both signature schemes (Ed25519 v2 with the
// queue-protocol X-Alt-Webhook-* signature, and the earlier HMAC v1 with per-endpoint whsec_
// secrets), the signing key ring with its published rotation schedule and its JWKS document,
// the URL policy that keeps deliveries off private networks (at registration, when a
// per-request URL is stored, and again on the resolved address when dialling), and the
// durable delivery ladder (5 min, 15 min, 1 h, 3 h, 8 h, 24 h; disable after ten failures;
// dead on 410; paced release after a passing re-challenge; 72-hour retention; host pauses).
//
// Storage is reached only through the small interfaces declared here (Store, KeyStore);
// MemStore and MemKeyStore are in-memory implementations used by the tests and by a
// single-process deployment. SQL implementations live in the store adapters and
// must pass webhookstest.RunStoreSuite and RunKeyStoreSuite.
// Time comes from an injected Clock; nothing here sleeps.
//
// The package speaks HTTP only as a client (it POSTs to receivers). It must not import
// net/http handlers of the service, database/sql or any driver; the routes that call
// Service.Register, Rechallenge, Delete and List live in the account API, and the route for
// GET /.well-known/jwks.json serves KeyRing.JWKS.
package webhooks
