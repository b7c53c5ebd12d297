package studio

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// TicketTTL is how long a ticket may wait before it is presented: long enough for a page to
// open its socket, short enough that a ticket written to a log is worth nothing.
const TicketTTL = 30 * time.Second

// ticketPrefix marks a ticket, so one is never taken for an API key or the other way round.
const ticketPrefix = "stk_"

// Ticket is what a signed ticket carries: the account, the key whose rights it lends, the one
// project it opens, when it expires, and a nonce that makes it single-use.
type Ticket struct {
	Account string    `json:"a"`
	KeyID   string    `json:"k"`
	Project string    `json:"p"`
	Expires time.Time `json:"e"`
	Nonce   string    `json:"n"`
}

// Reasons a ticket is refused.
var (
	ErrTicketInvalid = errors.New("studio: ticket is not one this service signed")
	ErrTicketExpired = errors.New("studio: ticket expired")
	ErrTicketUsed    = errors.New("studio: ticket already used")
)

// TicketClaimer records tickets as presented: ClaimTicket answers ErrTicketUsed when nonce was
// claimed before, by this process or another.
type TicketClaimer interface {
	ClaimTicket(ctx context.Context, nonce string, expires, now time.Time) error
}

// Tickets signs and verifies tickets with a key derived from the deployment secret, which every
// process shares, so a ticket minted by one process opens a socket on any other.
type Tickets struct {
	key []byte
	now func() time.Time
}

// NewTickets returns Tickets signing under secret (the deployment secret; a key of its own is
// derived from it, so a ticket's signature is never a file link's).
func NewTickets(secret []byte, now func() time.Time) *Tickets {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("modelexec studio tickets v1"))
	return &Tickets{key: m.Sum(nil), now: now}
}

// Mint signs a ticket for keyID's rights over account's project, valid for TicketTTL.
func (t *Tickets) Mint(account, keyID, project string) (string, Ticket, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", Ticket{}, err
	}
	tk := Ticket{Account: account, KeyID: keyID, Project: project,
		Expires: t.now().Add(TicketTTL).UTC().Truncate(time.Second), Nonce: base64.RawURLEncoding.EncodeToString(nonce)}
	body, err := json.Marshal(tk)
	if err != nil {
		return "", Ticket{}, err
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	return ticketPrefix + payload + "." + t.sign(payload), tk, nil
}

func (t *Tickets) sign(payload string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify answers the ticket token carries: ErrTicketInvalid when it is not one Mint signed,
// ErrTicketExpired past its expiry. Whether it was used is the TicketClaimer's to say.
func (t *Tickets) Verify(token string) (Ticket, error) {
	rest, ok := strings.CutPrefix(token, ticketPrefix)
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || !hmac.Equal([]byte(sig), []byte(t.sign(payload))) {
		return Ticket{}, ErrTicketInvalid
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	var tk Ticket
	if err != nil || json.Unmarshal(body, &tk) != nil || tk.Nonce == "" {
		return Ticket{}, ErrTicketInvalid
	}
	if !t.now().Before(tk.Expires) {
		return Ticket{}, ErrTicketExpired
	}
	return tk, nil
}
