package server

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// ParseWebhookScheme maps the --webhook-scheme flag to the signature scheme.
func ParseWebhookScheme(s string) (webhooks.Scheme, error) {
	switch s {
	case "", "ed25519":
		return webhooks.SchemeEd25519, nil
	case "hmac":
		return webhooks.SchemeHMAC, nil
	}
	return "", fmt.Errorf("--webhook-scheme: unknown scheme %q (ed25519 or hmac)", s)
}

// webhookSecret is the key material the key ring and the whsec_ derivation take: the
// deployment secret itself, or its SHA-256 when it is shorter than they need.
func webhookSecret(secret string) []byte {
	if len(secret) >= 32 {
		return []byte(secret)
	}
	sum := sha256.Sum256([]byte("modelexec webhooks " + secret))
	return sum[:]
}

// wireWebhooks builds the webhooks service over the database (endpoints, deliveries, the
// sealed signing keys and the platform-wide host gate), sets it and the key ring on the
// account API, and returns the workers of the webhooks role: the delivery engine and the
// events outbox relay. Without a deployment secret nothing is wired (signing keys would be
// sealed under a known key): the routes are absent and no worker runs.
func (s *Server) wireWebhooks(db *sqlstore.DB, acct *accountapi.Handler) ([]func(context.Context) error, error) {
	scheme := s.cfg.WebhookScheme
	if scheme == "" {
		scheme = webhooks.SchemeEd25519
	}
	if s.cfg.Secret == "" {
		s.log.Warn("no deployment secret: webhooks are not served; set --secret or MODELEXEC_SECRET")
		return nil, nil
	}
	policy := s.hookPolicy
	if len(policy.Allowed()) > 0 {
		s.log.Warn("webhooks may reach the private ranges allowed by --webhook-allow-private", "ranges", s.cfg.WebhookAllowPrivate)
	}
	key := webhookSecret(s.cfg.Secret)
	ring, err := webhooks.NewKeyRing(webhooks.KeyRingConfig{Store: sqlstore.WebhookKeys{DB: db}, Secret: key})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	svc, err := webhooks.NewService(webhooks.Config{Store: sqlstore.Webhooks{DB: db}, Keys: ring,
		Scheme: scheme, Secret: key, PublicBaseURL: s.urls.API, Logger: s.log,
		Metrics: s.webhookMetrics(), Policy: policy})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	acct.Webhooks, acct.KeyRing = svc, ring
	relay := webhooks.NewRelay(sqlstore.WebhookOutbox{DB: db}, svc, s.log)
	return []func(context.Context) error{svc.Engine().Run, relay.Run}, nil
}
