// Package compatapi serves /compat/v1, the compatibility surface for clients of the OpenAI
// protocol (spec 01 "What the service does" 7): models, chat/completions (also streamed as
// server-sent events ending in "data: [DONE]"), completions, responses and embeddings, in
// that protocol's shapes, with the service's keys, scopes, ledger and rate buckets.
//
// Its error statuses differ from the rest of the service (spec 02 "Error body"): an empty
// wallet and a spent key ceiling are 429 insufficient_quota, any other 402 is 429,
// output_limit_reached is 400, a language model's parser refusal is 422 without detail, the
// model's own refusal is 400, and a refusal after a streamed 200 arrives inside the stream.
// Errors use the protocol's {"error": {message, type, param, code}} envelope and keep
// x-should-retry. An idempotency key outside [A-Za-z0-9._-]{1,64} is folded into that set.
//
// It is a transport: calls go through chat.Service; it must not import database/sql or any
// store.
package compatapi
