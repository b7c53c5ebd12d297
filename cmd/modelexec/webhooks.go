package main

// WebhookFlags are the serve flags of the webhooks domain.
type WebhookFlags struct {
	WebhookScheme       string `default:"ed25519" enum:"ed25519,hmac" help:"Webhook signature scheme: ed25519 (Svc-Signature v2 and X-Alt-Webhook-Signature, keys in the JWKS) or hmac (the earlier v1 with per-endpoint whsec_ secrets)."`
	WebhookAllowPrivate string `help:"Comma-separated private ranges (CIDR or address) webhooks may reach, e.g. 10.0.0.0/8,127.0.0.1: for test rigs and private deployments whose receivers sit on a private network. Off as shipped (public hosts only); https is still required."`
}
