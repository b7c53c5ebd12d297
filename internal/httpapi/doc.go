// Package httpapi is the shared HTTP plumbing of the three surfaces (account API, queue host,
// synchronous host): handlers that return errors, the one function that turns an error into a
// response, request ids, the body limit and JSON decoding, rate-limit headers, and the order of
// checks of spec 02 (api_disabled, Origin, Authorization, key shape, fuse, account/key/plan/
// bucket, scope).
//
// It may import the domain packages; the domain packages never import it.
package httpapi
