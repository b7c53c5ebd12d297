package jobs

import "sync"

// Seats counts held connections (synchronous runs, wait, status streams): per account, per
// product and for the platform; DESIGN.md decision 28 gives the figures. LocalSeats counts
// them in this process; jobs/redisseats counts them across every process sharing a Redis.
type Seats interface {
	// Acquire takes one seat; when none is free it answers which cap was full
	// (platform_busy, product_busy or account_busy). release gives the seat back (once,
	// whatever the number of calls).
	Acquire(account, product string) (release func(), declined string)
	// InUse is how many held connections of this process hold a seat now.
	InUse() int
}

// Seat refusals, in the order Acquire checks them.
const (
	PlatformBusy = "platform_busy"
	ProductBusy  = "product_busy"
	AccountBusy  = "account_busy"
)

// LocalSeats are Seats counted in this process.
type LocalSeats struct {
	mu                          sync.Mutex
	perAccount, perProduct, all int
	accounts, products          map[string]int
	total                       int
}

// NewSeats returns seats of this process with the given caps.
func NewSeats(perAccount, perProduct, platform int) *LocalSeats {
	return &LocalSeats{perAccount: perAccount, perProduct: perProduct, all: platform, accounts: map[string]int{}, products: map[string]int{}}
}

// Acquire takes one seat; when none is free it answers which cap was full.
func (s *LocalSeats) Acquire(account, product string) (release func(), declined string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.total >= s.all:
		return nil, PlatformBusy
	case s.products[product] >= s.perProduct:
		return nil, ProductBusy
	case s.accounts[account] >= s.perAccount:
		return nil, AccountBusy
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

// InUse is how many held connections hold a seat in this process now.
func (s *LocalSeats) InUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}
