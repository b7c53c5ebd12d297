// Package fetch reads the files named by `url` inputs for runners (runners.Inputs).
//
// Every connection goes through an SSRF guard (code.dny.dev/ssrf) run by the dialer on the
// address actually being dialled, after DNS resolution, so neither a hostile DNS answer nor
// a redirect can reach a private, loopback, link-local, unique-local or IPv4-mapped address.
// Only http and https are fetched, through no proxy, within a size and a time limit, and the
// content type is sniffed from the bytes, never trusted from the server.
//
// Links signed by this service's own blob Signer are read straight from the blob store after
// verifying the signature, so uploads work on a loopback development server without opening
// the guard. The only way to let the guard through to loopback is the Go option
// AllowLoopbackForTests, which no configuration file or flag can reach.
//
// Fetch returns typed errors (*Error with a Kind); turning them into image_unreadable /
// image_required refusals is the runner's business. This package must not import net/http
// handlers or database/sql.
package fetch
