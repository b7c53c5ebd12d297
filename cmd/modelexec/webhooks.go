package main

// WebhookFlags are the serve flags of the webhooks domain.
type WebhookFlags struct {
	WebhookScheme string `default:"ed25519" enum:"ed25519,hmac" help:"Webhook signature scheme: ed25519 (Svc-Signature v2 and X-Alt-Webhook-Signature, keys in the JWKS) or hmac (the earlier v1 with per-endpoint whsec_ secrets)."`
}
