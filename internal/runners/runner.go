// Package runners owns the Runner port: the one interface every model backend (the built-in
// CPU reference runners, Cog model servers, OpenAI-compatible upstreams) implements.
//
// It must not import net/http handlers, database/sql or any store: a runner sees a validated
// input, a place to read url inputs from, a place to write output files to, and a reporter.
package runners

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
)

// Job is what a runner is handed: one validated request with its defaults applied.
type Job struct {
	ID        string          // job id, <product>_k<time-ordered random>
	RequestID string          // the queue request id
	Address   string          // svc-serverless/<slug>
	Slug      string          // model slug, e.g. image-4b
	Input     json.RawMessage // validated input, defaults filled in (seed always present)
	// Quoted is the credits the job was quoted: a runner that meters its own usage (a language
	// model's, chat.Meter) settles the fraction of it that the usage costs.
	Quoted int64
}

// Inputs reads url inputs (uploaded files or external https addresses), bounded in size
// and through an SSRF-safe client.
type Inputs interface {
	// Fetch returns the bytes and the sniffed content type of the file at url.
	Fetch(ctx context.Context, url string) (data []byte, contentType string, err error)
}

// Outputs stores the files a runner produces.
type Outputs interface {
	// Put stores one output file and returns its storage key.
	Put(ctx context.Context, name, contentType string, data []byte) (key string, err error)
}

// Reporter receives a runner's log lines and progress while it runs.
type Reporter interface {
	Log(level, message string)
	Progress(fraction float64) // 0..1 of the quoted work
}

// Env is everything a runner may touch besides its job.
type Env struct {
	Inputs  Inputs
	Outputs Outputs
	Report  Reporter
	// Text, when set, receives a language model's output as it is written, piece by piece,
	// for the request that streams it. Runners that write no text ignore it.
	Text func(delta string)
}

// File is one stored output file.
type File struct {
	Key         string `json:"storage_key"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
}

// Result is a finished (or cancelled) run.
//
// Document is the model's output document. Any object in it that carries a "storage_key"
// field names a stored file: the API layer replaces that field by a signed "url" (valid
// 15 minutes) when it serves the document, so a document never holds a URL that expires.
type Result struct {
	Document map[string]any     `json:"document"`
	Files    []File             `json:"files"`
	Metrics  map[string]float64 `json:"metrics,omitempty"`
	// Done is the fraction (0..1) of the quoted work actually performed. A completed run
	// reports 1; a cancelled run reports what it got through, so the charge settles at or
	// below the quote. Zero on a completed run is read as 1.
	Done float64 `json:"done"`
}

// FilesBytes is the size of files together: what signing links to them hands out (egress).
func FilesBytes(files []File) int64 {
	var n int64
	for _, f := range files {
		n += f.Bytes
	}
	return n
}

// UnmarshalJSON reads a stored result with the document's numbers kept as they were written
// (json.Number): a seed past 2^53 reads back as the seed that made the image, not as the
// nearest float64, which names another image or none the contract takes.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var p plain
	if err := d.Decode(&p); err != nil {
		return err
	}
	*r = Result(p)
	return nil
}

// Runner runs jobs for one or more model slugs. Cancellation is the context: a runner
// returns promptly once ctx is done, with ctx's error and the partial Result it reached.
type Runner interface {
	Run(ctx context.Context, job Job, env Env) (Result, error)
}

// Canceller is implemented by a runner that may be unable to stop a job once it runs. A runner
// that does not implement it stops on its context; one that reports false for a model makes a
// cancel of that model's running job answer cancel_unsupported (400, carrying product) and the
// job runs on to its end. A job still waiting to start is cancelled whatever the runner says.
type Canceller interface {
	CanCancel(slug string) bool
}

// Violation names one field of a refused input, in the queue-protocol detail shape.
type Violation struct {
	Loc  []string `json:"loc"`
	Msg  string   `json:"msg"`
	Type string   `json:"type"`
}

// Refusal is the model's own refusal of the request as written (content filter, a value or
// file it will not take). It answers 422 with detail on queue hosts and is refunded.
type Refusal struct {
	Code   string // error code, e.g. image_unreadable, content_policy
	Detail []Violation
}

func (e *Refusal) Error() string {
	if len(e.Detail) > 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Detail[0].Msg)
	}
	return e.Code
}

// Failure is a run that failed for a reason other than the request as written.
type Failure struct {
	Code string // error code, e.g. runner_failed, upstream_busy
	// Message is one sentence for a person, shown on the job and in answers: never an error
	// chain (addresses, Go types, library wording); those go in Cause.
	Message   string
	Retryable bool  // true when the model was busy and the job may be tried again
	Cause     error // what went wrong underneath, for the operator's log only
}

func (e *Failure) Error() string { return e.Code + ": " + e.Message }

// Unwrap is the cause, for errors.Is and errors.As.
func (e *Failure) Unwrap() error { return e.Cause }

// Internal is a failure of the service's own making (an encoder, a file the runner needs):
// what says so to the person is what, the cause goes to the log.
func Internal(what string, err error) *Failure {
	return &Failure{Code: "runner_failed", Message: what + " failed on our side; the job was refunded.", Cause: err}
}

// OutputNotStored is the failure of a run whose output could not be stored (err, from the
// output store): a sentence that says whether the storage is full, and the cause for the log.
func OutputNotStored(err error) *Failure {
	msg := "The output could not be stored; the job was refunded. Send the request again later."
	if errors.Is(err, syscall.ENOSPC) {
		msg = "The output could not be stored: the service's storage is full. The job was refunded; send the request again later."
	}
	return &Failure{Code: "run_failed", Message: msg, Retryable: true, Cause: err}
}

// ErrUnknownModel is returned by a Registry asked for a slug it has no runner for.
var ErrUnknownModel = errors.New("runners: no runner for model")

// Registry maps model slugs to their runners.
type Registry map[string]Runner

// For returns the runner of slug.
func (r Registry) For(slug string) (Runner, error) {
	if rn, ok := r[slug]; ok {
		return rn, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownModel, slug)
}
