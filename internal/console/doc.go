// Package console serves the web console under /console on the account API host: sign-in for
// an account's users and for operators, keys, webhooks, jobs, usage, a playground and the
// operator's account pages. Pages are rendered on the server from html/template; the little
// JavaScript there is (copy buttons, the playground's progress) is served from static/.
//
// Every credit or account change goes through the ledger service, every key through the auth
// service: the console is a transport like the account API, and imports no other transport.
//
// Browser safety: the session token lives in an HttpOnly, SameSite=Lax cookie (Secure when the
// console is served over https); every form carries a per-session CSRF token and every unsafe
// request must also pass net/http's cross-origin protection (Sec-Fetch-Site / Origin). Session
// tokens are refused by the API surfaces (auth.Service.Parse).
package console
