// Package webhooks verifies the service's signed webhook deliveries for a receiver: the
// Svc-Signature header (t=<unix>,v2=<base64url Ed25519 over "t.body">,kid=<key id>) against
// the public key named by kid in the deployment's JWKS (/.well-known/jwks.json), with a
// timestamp tolerance so a replayed delivery is refused. It uses only the standard library.
package webhooks
