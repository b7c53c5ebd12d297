// Package blobs owns stored files: uploads and job outputs behind the Store port, the
// signed links that let a caller read or write one file for 15 minutes, and the domain
// logic of POST /v1/uploads.
//
// Backends: local files (the embedded default, ./data/blobs; atomic writes through a
// .tmp folder, 0600 files in 0700 folders), S3-compatible storage through the AWS SDK,
// and memory for tests. Signed links of the local backend are HMAC-SHA256 links served by
// this service (see Signer and the blobhttp subpackage); S3 links are presigned by the
// bucket itself (see BucketSigner).
//
// This package must not import net/http handlers or database/sql; the HTTP surface that
// serves signed links lives in blobs/blobhttp.
package blobs
