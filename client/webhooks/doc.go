// Package webhooks verifies the service's signed webhook deliveries for a receiver: the
// Svc-Signature header (t=<unix>,v2=<base64url Ed25519 over "t.body">,kid=<key id>; any v2
// value that verifies accepts it) against the public key named by kid in the deployment's JWKS
// (/.well-known/jwks.json, refetched on an unknown kid at most once a minute), with a
// timestamp tolerance so a replayed delivery is refused. The earlier v1 HMAC scheme and the
// X-Alt-Webhook-Signature are not checked. A signature says the service sent the delivery, not
// that it is the receiver's: VerifyAccount also compares the body's account with the
// receiver's own. It uses only the standard library.
package webhooks
