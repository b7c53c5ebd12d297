// Package blobhttp serves the signed links of the local blob backend: GET (and HEAD) read
// a file with its stored content type, PUT writes one, each only inside what the link was
// signed for (method, expiry, content type, size). The account API mounts Handler at the
// path the Signer's public base names (e.g. /files/).
//
// It holds no domain logic: signing and verification live in package blobs.
package blobhttp
