// Package auth owns accounts, plans and API keys: the key format and its offset parser, secret
// hashing under the deployment secret, expiry and revocation, live-key limits, scopes (current
// and older names) and per-key monthly credit ceilings.
//
// It must not import net/http handlers, database/sql or any driver; storage is the Store port.
package auth
