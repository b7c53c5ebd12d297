// Package cog owns the Runner that sends jobs to a model server speaking Cog's HTTP
// prediction API (https://cog.run/http/), so real GPU models plug into modelexec by
// configuration.
//
// One run: GET /health-check until the server says READY (BUSY is back-pressure: a
// retryable *runners.Failure upstream_busy); PUT /predictions/{id} with the job's input,
// `Prefer: respond-async` and a webhook back to us; then wait for the webhook (the server's
// webhook route hands the body to Runner.Complete) and, in case it never comes, poll
// GET /predictions/{id}. A ctx cancel sends POST /predictions/{id}/cancel. Answers map to
// the Runner contract: 409 → upstream_busy (retryable), 422 with `detail` → *runners.Refusal
// invalid_input carrying that detail, a failed prediction → *runners.Failure runner_failed,
// no answer within PredictionTimeout → cancel + *runners.Failure run_timed_out. A server that
// restarts mid-run (connection errors, then 404 for the prediction) is waited for through
// /health-check and the prediction PUT again (PUT is idempotent by id), at most MaxResubmits
// times.
//
// Inputs: every url input of the job (the catalogue says which, Config.MapURLs) is fetched
// through Env.Inputs, the SSRF-safe fetcher, and sent as a data: URL, so the model server
// never dials an address a user chose; a file that cannot be fetched refuses the job
// (image_unreadable at its field) before the server is asked.
//
// Outputs: every string in the prediction's output that is a data: URL is decoded and stored
// through Env.Outputs; every http(s) URL is fetched through Env.Inputs (the SSRF-safe
// fetcher) and stored. Each becomes {"storage_key", "content_type", "file_size"}, which the API
// turns into a signed url. An object output is the result document as is; any other output is
// {"output": …}. Numeric prediction metrics become Result.Metrics; log lines are reported as
// they arrive, and tqdm-style "NN%|" progress is reported and used as Result.Done on cancel.
//
// This package must not import net/http handlers of the service (it is an HTTP client; the
// webhook route lives in the API layer), database/sql, or any store.
package cog
