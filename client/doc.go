// Package client is the Go SDK of modelexec: submit a job to a model on the queue host, follow
// it to the end (status reads or the status stream), read its result, cancel it, upload input
// files, read a model's published price rule, and verify signed webhook deliveries.
//
// It is public and self-contained: it speaks the service's HTTP protocol (the queue protocol
// on the queue host, /v1 on the account API) and imports nothing of the service's own code,
// so it can be vendored by an application without pulling in the server.
package client
