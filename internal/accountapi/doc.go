// Package accountapi is the account and catalogue API ({base_url}/v1): account info, catalogue,
// models, jobs, usage, uploads, webhook endpoints, the OpenAPI contract and the JWKS. routes.go
// lists the whole surface.
package accountapi
