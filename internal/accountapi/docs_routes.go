package accountapi

import (
	"bytes"
	"html/template"
	"net/http"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// docsRoutes serves the pages every error body's `docs` link points at, rendered from the
// error catalogue so the page and the answer cannot disagree. They need no key: a client
// holding a refusal may hold no valid key at all.
func (h *Handler) docsRoutes(mux *http.ServeMux) {
	mux.Handle("GET /docs/errors", h.Gate.Keyless(errorIndexPage()))
	mux.Handle("GET /docs/errors/{code}", h.Gate.Keyless(errorPage()))
}

// errorDoc is one catalogue row as the pages show it.
type errorDoc struct {
	Code, Type, Retry, Charged, Message, Why, Path string
	Status                                         int
	Carries                                        []string
	RetryHelp, ChargedHelp                         string
}

// retryHelp and chargedHelp say what each advice value asks of a client (spec 02).
var retryHelp = map[apierr.Retry]string{
	apierr.RetrySameKey:         "The identical request may succeed later; resending it with the same idempotency key is safe.",
	apierr.RetryAfterRetryAfter: "The identical request may succeed after the seconds the Retry-After header gives.",
	apierr.RetryNewKey:          "The idempotency key is spent: a retry needs a new key and is a new charge.",
	apierr.RetryPollFirst:       "A job may exist and be charged: read it before sending again.",
	apierr.RetryNever:           "Resending the same request cannot help; change what the message names.",
}

var chargedHelp = map[apierr.Charged]string{
	apierr.ChargedNo:       "Nothing was charged.",
	apierr.ChargedRefunded: "The charge was refunded.",
	apierr.ChargedStands:   "The charge stands.",
	apierr.ChargedUnknown:  "Whether a charge stands is not known yet: read the job or your usage.",
	apierr.ChargedBool:     "The body carries a boolean: true means the charge stands, false that nothing was charged.",
}

func docOf(c apierr.Code) errorDoc {
	e := apierr.Lookup(c)
	charged := string(e.Charged)
	if e.Charged == apierr.ChargedBool {
		charged = "true / false"
	}
	return errorDoc{
		Code: string(c), Type: e.Type, Retry: string(e.Retry), Charged: charged, Message: e.Message,
		Why: e.WhyUnreachable, Path: apierr.DocsPath(c), Status: e.Status, Carries: e.Carries,
		RetryHelp: retryHelp[e.Retry], ChargedHelp: chargedHelp[e.Charged],
	}
}

const docsStyle = `body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
code{background:#f3f3f3;padding:0 .2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}`

var docsPages = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Error codes</title><style>` + docsStyle + `</style></head>
<body><h1>Error codes</h1>
<p>Every refusal has the same body: <code>error</code> (the code: match on it), <code>error_type</code>,
<code>message</code> (written for a person; never match on it), <code>retry</code>, <code>charged</code>,
<code>docs</code> (a link to the code's page), <code>request_id</code>, plus the fields the code carries.
On the queue and synchronous hosts a refusal of what the request says is 422 with <code>detail</code>,
one <code>{loc, msg, type}</code> entry per problem found.</p>
<table><tr><th>Code</th><th>Status</th><th>error_type</th><th>retry</th><th>charged</th><th>Meaning</th></tr>
{{range .}}<tr id="{{.Code}}"><td><a href="{{.Path}}"><code>{{.Code}}</code></a></td><td>{{.Status}}</td><td>{{.Type}}</td><td><code>{{.Retry}}</code></td><td><code>{{.Charged}}</code></td><td>{{.Message}}{{if .Why}} <em>Not answered by this service.</em>{{end}}</td></tr>
{{end}}</table></body></html>
`))

var docsCodePage = template.Must(template.New("code").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Code}}</title><style>` + docsStyle + `</style></head>
<body><p><a href="/docs/errors">All error codes</a></p>
<h1><code>{{.Code}}</code></h1>
<p>{{.Message}}</p>
<table>
<tr><th>HTTP status</th><td>{{.Status}}</td></tr>
<tr><th><code>error_type</code></th><td>{{.Type}}</td></tr>
<tr><th><code>retry</code></th><td><code>{{.Retry}}</code>: {{.RetryHelp}}</td></tr>
<tr><th><code>charged</code></th><td><code>{{.Charged}}</code>: {{.ChargedHelp}}</td></tr>
{{if .Carries}}<tr><th>Also carries</th><td>{{range $i, $f := .Carries}}{{if $i}}, {{end}}<code>{{$f}}</code>{{end}}</td></tr>{{end}}
</table>
{{if .Why}}<h2>Not answered by this service</h2><p>{{.Why}}</p>{{end}}
<p>Match on <code>error</code>, never on <code>message</code>: messages are written for a person and may change.</p>
</body></html>
`))

func errorIndexPage() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		var docs []errorDoc
		for _, c := range apierr.Codes() {
			docs = append(docs, docOf(c))
		}
		return writeHTML(w, r, docsPages, docs)
	})
}

func errorPage() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		code := apierr.Code(r.PathValue("code"))
		if !apierr.Known(code) {
			return apierr.Newf(apierr.NotFound, "No error code is named %q; the list is at /docs/errors.", strings.TrimSpace(string(code)))
		}
		return writeHTML(w, r, docsCodePage, docOf(code))
	})
}

// writeHTML renders into a buffer first so a template failure answers a JSON error, not half a page.
func writeHTML(w http.ResponseWriter, r *http.Request, t *template.Template, data any) error {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
	return nil
}
