package jobs

import "sync"

// Seats counts held connections (synchronous runs, wait, status streams): per account, per
// product and for the platform. They are per process; DESIGN.md decision 28 gives the figures.
type Seats struct {
	mu                          sync.Mutex
	perAccount, perProduct, all int
	accounts, products          map[string]int
	total                       int
}

// NewSeats returns seats with the given caps.
func NewSeats(perAccount, perProduct, platform int) *Seats {
	return &Seats{perAccount: perAccount, perProduct: perProduct, all: platform, accounts: map[string]int{}, products: map[string]int{}}
}

// Acquire takes one seat; when none is free it answers which cap was full
// (platform_busy, product_busy or account_busy).
func (s *Seats) Acquire(account, product string) (release func(), declined string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.total >= s.all:
		return nil, "platform_busy"
	case s.products[product] >= s.perProduct:
		return nil, "product_busy"
	case s.accounts[account] >= s.perAccount:
		return nil, "account_busy"
	}
	s.total++
	s.products[product]++
	s.accounts[account]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			s.products[product]--
			s.accounts[account]--
			if s.accounts[account] == 0 {
				delete(s.accounts, account)
			}
		})
	}, ""
}
