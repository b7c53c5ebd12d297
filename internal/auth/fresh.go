package auth

import (
	"context"
	"fmt"
)

// Fresh re-reads p's account and key from the store. The principal cache of Authenticate may be
// up to cacheTTL old, which is fine for deciding whether a key is valid but not for figures a
// caller reads back: GET /v1/me shows the balance and the key's spend, and right after a charge
// it must show the charge (the cache is for key validity only). The refreshed principal also
// replaces the cached one, so the next read-only request sees the same figures.
func (s *Service) Fresh(ctx context.Context, p Principal) (Principal, error) {
	k, err := s.store.Key(ctx, p.Key.ID)
	if err != nil {
		return Principal{}, fmt.Errorf("auth: re-read key %s: %w", p.Key.ID, err)
	}
	a, err := s.store.Account(ctx, k.AccountID)
	if err != nil {
		return Principal{}, fmt.Errorf("auth: re-read account %s: %w", k.AccountID, err)
	}
	fresh := Principal{Account: a, Key: k}
	s.mu.Lock()
	if c, ok := s.cache[k.ID]; ok {
		s.cache[k.ID] = cached{p: fresh, at: c.at}
	}
	s.mu.Unlock()
	return fresh, nil
}
