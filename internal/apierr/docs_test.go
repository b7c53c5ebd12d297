package apierr_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
)

var update = flag.Bool("update", false, "rewrite docs/errors.md from the catalogue")

const errorsDoc = "../../docs/errors.md"

// renderErrors is docs/errors.md: the catalogue as a table, the detail cap, and why each code
// the service never answers is unreachable.
func renderErrors() string {
	var b strings.Builder
	b.WriteString(`# Error codes

Every refusal has the same body: ` + "`error`" + ` (the code: match on it), ` + "`error_type`" + `, ` + "`message`" + `
(written for a person; never match on it), ` + "`retry`" + `, ` + "`charged`" + `, ` + "`docs`" + ` (a link to the code's page,
which the account API serves at ` + "`/docs/errors/<code>`" + ` under its public URL, no key needed) and
` + "`request_id`" + `, plus the fields the code carries. This page and those are generated from the service's
error catalogue.

## Long ` + "`detail`" + ` lists

On the queue and synchronous hosts a refusal of what the request says is 422 with ` + "`detail`" + `, one
` + "`{loc, msg, type}`" + ` entry per problem found; its ` + "`error_type`" + ` is then ` + "`ValidationError`" + `
(` + "`ContentPolicyError`" + ` for a content refusal), whatever the table below says. The list holds at most ` + fmt.Sprint(apierr.MaxDetail) + ` entries. When more problems
were found, it ends with one more entry of type ` + "`" + apierr.DetailTruncatedType + "`" + ` whose ` + "`msg`" + ` says how many
were left out, and the body carries ` + "`detail_truncated`" + ` with that count. Fix the listed problems and
send again to see the rest. A model input holding more than 10,000 keys or 10,000 values (at
every depth), or nesting more than 32 levels deep, is refused from its top-level fields alone,
before it is decoded: the unknown fields are listed, or, when every field is known, one entry of
type ` + "`too_long`" + ` says which bound the body is over.

Every other JSON body (webhooks, uploads, chat, embeddings, studio, the compatibility surface, and
the input of a chat or embeddings model) may hold at most 50,000 values and nest at most 64
levels deep; beyond that it is refused ` + "`invalid_body`" + ` carrying ` + "`limit`" + `, before it is decoded.
A body is sent uncompressed: one with a ` + "`Content-Encoding`" + ` (other than ` + "`identity`" + `) is refused
` + "`invalid_body`" + ` naming it (422 on the model hosts), and is never inflated.

## The advice on a failed job

The ` + "`retry`" + ` column is the advice where a code refuses a submit. A job that ran and failed keeps its
idempotency key: the same key replays the failure. So the read of a failed job whose code advises
` + "`same_key`" + ` or ` + "`after_retry_after`" + ` (` + "`vendor_budget_exhausted`" + `, for one) answers ` + "`retry: new_key`" + `
instead, with ` + "`charged: refunded`" + ` when the job had been charged.

## Codes

| Code | Status | error_type | retry | charged | Carries | Meaning |
|---|---|---|---|---|---|---|
`)
	var unreachable []apierr.Entry
	for _, c := range apierr.Codes() {
		e := apierr.Lookup(c)
		charged := string(e.Charged)
		if e.Charged == apierr.ChargedBool {
			charged = "true / false"
		}
		carries := ""
		if len(e.Carries) > 0 {
			carries = "`" + strings.Join(e.Carries, "`, `") + "`"
		}
		note := e.Message
		if e.WhyUnreachable != "" {
			note += " *Not answered by this service (see below).*"
			unreachable = append(unreachable, e)
		}
		fmt.Fprintf(&b, "| <a id=%q></a>`%s` | %d | %s | `%s` | `%s` | %s | %s |\n", c, c, e.Status, e.Type, e.Retry, charged, carries, note)
	}
	b.WriteString("\n## Codes this service does not answer\n\nThe spec catalogues these codes; the situations they name cannot arise here.\n\n")
	for _, e := range unreachable {
		fmt.Fprintf(&b, "- `%s`: %s\n", e.Code, e.WhyUnreachable)
	}
	return b.String()
}

// TestERR_CatalogueDocumented proves ERR-01's `docs` link leads somewhere: docs/errors.md is
// the catalogue rendered (every code with its status, type, retry, charged and carried fields),
// the detail cap is documented, and every code the service never answers says why there
// (go test ./internal/apierr -run TestERR_CatalogueDocumented -update rewrites it).
func TestERR_CatalogueDocumented(t *testing.T) {
	want := renderErrors()
	if *update {
		if err := os.WriteFile(errorsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(errorsDoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("docs/errors.md is not the catalogue rendered: run go test ./internal/apierr -run TestERR_CatalogueDocumented -update")
	}
	for _, c := range apierr.Codes() {
		if !strings.Contains(want, "<a id=\""+string(c)+"\"></a>") {
			t.Fatalf("%s has no entry", c)
		}
	}
}
