package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Hosts are the public base URLs of the queue and synchronous hosts, written into the
// servers of the model paths.
type Hosts struct {
	Queue string
	Sync  string
}

// DefaultHosts are the serve defaults (DESIGN: queue 127.0.0.1:8081, sync 127.0.0.1:8082).
var DefaultHosts = Hosts{Queue: "http://127.0.0.1:8081", Sync: "http://127.0.0.1:8082"}

// WithHosts sets the hosts the OpenAPI documents name.
func WithHosts(h Hosts) Option { return func(c *Catalog) { c.hosts = h } }

// OpenAPIParts is what the whole-service document takes from the catalogue: every model's
// paths, the schemas they reference and the bearer security scheme they name.
type OpenAPIParts struct {
	Paths           map[string]any
	Schemas         map[string]any
	SecuritySchemes map[string]any
}

// SchemaName is the component name of a model's input schema (image-4b → Image4bInput).
func SchemaName(slug string) string {
	var b strings.Builder
	for _, part := range strings.Split(slug, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Input"
}

// ModelDocument is one model's OpenAPI 3.1.0 contract (GET /v1/models/{address}/openapi.json).
//
// The queue operations live under the queue host; the synchronous run shares its path with
// the queue submit on another host, so it is written as path /<slug> under the server
// <sync host>/svc-serverless (the URL it names is the same <sync host>/svc-serverless/<slug>).
func (c *Catalog) ModelDocument(slug string) ([]byte, error) {
	m, ok := c.Model(slug)
	if !ok {
		return nil, fmt.Errorf("catalog: no model %q", slug)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       m.Label + " " + m.Name + " (" + m.Address + ")",
			"version":     "1.0.0",
			"description": "Input contract, price rule and queue and synchronous operations of " + m.Address + ".",
		},
		"servers": []any{map[string]any{"url": c.hosts.Queue}},
		"paths":   c.modelPaths(m, false),
		"components": map[string]any{
			"schemas":         c.schemas([]*Model{m}),
			"securitySchemes": securitySchemes(),
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
	for k, v := range m.extensions() {
		doc[k] = v
	}
	return json.MarshalIndent(doc, "", "  ")
}

// OpenAPIComponents gives every model's paths and schemas for the whole-service document.
// Operation ids there are suffixed with the slug (submit-image-4b) to stay unique.
func (c *Catalog) OpenAPIComponents() OpenAPIParts {
	paths := map[string]any{}
	for _, m := range c.models {
		for k, v := range c.modelPaths(m, true) {
			paths[k] = v
		}
	}
	return OpenAPIParts{Paths: paths, Schemas: c.schemas(c.models), SecuritySchemes: securitySchemes()}
}

func securitySchemes() map[string]any {
	return map[string]any{"bearer": map[string]any{
		"type": "http", "scheme": "bearer",
		"description": "Authorization: Bearer <API_KEY> (also a bare key, or Key <API_KEY> for fal clients).",
	}}
}

func (m *Model) extensions() map[string]any {
	return map[string]any{
		"x-svc-model-id":         m.Address,
		"x-svc-hosted-by":        m.HostedBy,
		"x-svc-scope":            m.Scope.Required,
		"x-svc-scopes":           m.Scope.Accepted,
		"x-svc-price":            m.PriceView(),
		"x-svc-surface-enabled":  map[string]any{"queue": m.effectiveState() == Connected, "sync": m.effectiveState() == Connected},
		"x-svc-lifecycle":        m.Row().Lifecycle,
		"x-svc-expected-seconds": m.ExpectedSeconds,
	}
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func resp(desc string, schema any) map[string]any {
	r := map[string]any{"description": desc}
	if schema != nil {
		r["content"] = jsonContent(schema)
	}
	return r
}

func param(name, in, desc string, schema map[string]any, required bool) map[string]any {
	p := map[string]any{"name": name, "in": in, "description": desc, "schema": schema}
	if required {
		p["required"] = true
	}
	return p
}

func errorResponses(codes ...string) map[string]any {
	out := map[string]any{}
	for _, c := range codes {
		out[c] = resp("Error; see the error field.", ref("Error"))
	}
	out["422"] = resp("The request as written is refused (validation, band_not_priced, queue_not_offered, ...).", ref("ValidationError"))
	return out
}

func (c *Catalog) modelPaths(m *Model, unique bool) map[string]any {
	opID := func(s string) string {
		if unique {
			return s + "-" + m.Slug
		}
		return s
	}
	queue := []any{map[string]any{"url": c.hosts.Queue}}
	sync := []any{map[string]any{"url": strings.TrimRight(c.hosts.Sync, "/") + "/" + Namespace}}
	input := ref(SchemaName(m.Slug))
	output := ref(OutputSchemaName(m.Slug))
	tags := []any{m.Address}
	security := []any{map[string]any{"bearer": []any{}}}
	reqID := param("request_id", "path", "The request id a submit answered.", map[string]any{"type": "string"}, true)
	logs := param("logs", "query", "Include runner log lines.", map[string]any{"type": "string", "enum": []any{"1", "0", "true", "false"}}, false)

	submitParams := []any{
		param("wait", "query", "Hold the request open until the job settles (seconds).", map[string]any{"type": "integer", "minimum": 1, "maximum": 300}, false),
		logs,
		param("webhook", "query", "https address to POST this job's outcome to once.", map[string]any{"type": "string", "format": "uri", "maxLength": 2000}, false),
		param("alt_webhook", "query", "Alias of webhook.", map[string]any{"type": "string", "format": "uri", "maxLength": 2000}, false),
		param("max_queue_length", "query", "Refuse rather than queue behind more waiting requests; queue_not_offered on models that do not queue.", map[string]any{"type": "integer", "minimum": 0, "maximum": 2147483647}, false),
		param("alt_max_queue_length", "query", "Alias of max_queue_length.", map[string]any{"type": "integer", "minimum": 0, "maximum": 2147483647}, false),
		param("X-Svc-Priority", "header", "normal or low; queue_not_offered on models that do not queue.", map[string]any{"type": "string", "enum": []any{"normal", "low"}}, false),
		param("X-Alt-Queue-Priority", "header", "Alias of X-Svc-Priority.", map[string]any{"type": "string", "enum": []any{"normal", "low"}}, false),
		param("X-Svc-Request-Timeout", "header", "Seconds to wait for a seat.", map[string]any{"type": "number", "minimum": 1, "maximum": 86400}, false),
		param("X-Alt-Request-Timeout", "header", "Alias of X-Svc-Request-Timeout.", map[string]any{"type": "number", "minimum": 1, "maximum": 86400}, false),
		param("X-Svc-Covered-Only", "header", "Run only if a pass or promotion pays.", map[string]any{"type": "string"}, false),
		param("Idempotency-Key", "header", "Alias of idempotency_key.", map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}, false),
	}
	submit := map[string]any{
		"operationId": opID("submit"),
		"summary":     "Submit to " + m.Address + " (queue)",
		"tags":        tags,
		"security":    security,
		"parameters":  submitParams,
		"requestBody": map[string]any{"required": true, "content": jsonContent(input)},
		"responses": merge(errorResponses("400", "401", "402", "403", "404", "409", "429", "501", "503"), map[string]any{
			"200": resp("Status document.", ref("StatusDocument")),
			"202": resp("dispatch_unresolved: the charge stands; poll status_url.", ref("StatusDocument")),
		}),
	}
	for k, v := range m.extensions() {
		submit[k] = v
	}
	run := map[string]any{
		"operationId": opID("run"),
		"summary":     "Run " + m.Address + " synchronously",
		"tags":        tags,
		"security":    security,
		"parameters":  submitParams[1:],
		"requestBody": map[string]any{"required": true, "content": jsonContent(input)},
		"responses": merge(errorResponses("400", "401", "402", "403", "404", "409", "429", "500", "501", "502", "503", "504"), map[string]any{
			"200": resp("The model's output, the document the result read answers, with warnings beside it when the request broke a cross-field rule before its enforcement date.", output),
		}),
	}
	base := "/" + Namespace + "/" + m.Slug
	return map[string]any{
		base: map[string]any{"servers": queue, "post": submit},
		base + "/requests/{request_id}/status": map[string]any{"servers": queue, "get": map[string]any{
			"operationId": opID("status"), "summary": "Status of a request", "tags": tags, "security": security,
			"parameters": []any{reqID, logs},
			"responses":  merge(errorResponses("401", "404"), map[string]any{"200": resp("Status document.", ref("StatusDocument"))}),
		}},
		base + "/requests/{request_id}/status/stream": map[string]any{"servers": queue, "get": map[string]any{
			"operationId": opID("stream"), "summary": "Stream of the status document (up to five minutes)", "tags": tags, "security": security,
			"parameters": []any{reqID, logs},
			"responses": merge(errorResponses("401", "404", "503"), map[string]any{"200": map[string]any{
				"description": "Server-sent events carrying status documents.",
				"content":     map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}},
			}}),
		}},
		base + "/requests/{request_id}": map[string]any{"servers": queue, "get": map[string]any{
			"operationId": opID("result"), "summary": "Result, once COMPLETED", "tags": tags, "security": security,
			"parameters": []any{reqID, logs},
			"responses":  merge(errorResponses("401", "404", "409"), map[string]any{"200": resp("The model's output.", output)}),
		}},
		base + "/requests/{request_id}/cancel": map[string]any{"servers": queue, "put": map[string]any{
			"operationId": opID("cancel"), "summary": "Ask for cancellation", "tags": tags, "security": security,
			"parameters": []any{reqID},
			"responses":  merge(errorResponses("401", "404"), map[string]any{"200": resp("Status document after the cancellation request.", ref("StatusDocument"))}),
		}},
		"/" + m.Slug: map[string]any{"servers": sync, "post": run},
	}
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// schemas are the component schemas of models: their inputs plus the shared documents.
func (c *Catalog) schemas(models []*Model) map[string]any {
	out := map[string]any{
		"StatusDocument": statusDocumentSchema(),
		"Output": map[string]any{
			"type":        "object",
			"description": "The model's output document; objects naming a file carry a url signed for 15 minutes.",
		},
		"Error": map[string]any{
			"type":     "object",
			"required": []any{"error", "error_type", "message", "request_id"},
			"properties": map[string]any{
				"error":      map[string]any{"type": "string", "description": "Code; match on this."},
				"error_type": map[string]any{"type": "string"},
				"message":    map[string]any{"type": "string"},
				"retry":      map[string]any{"type": "string", "enum": []any{"same_key", "after_retry_after", "new_key", "poll_first", "never"}},
				"charged":    map[string]any{"type": []any{"string", "boolean"}},
				"docs":       map[string]any{"type": "string"},
				"request_id": map[string]any{"type": "string"},
			},
		},
		"ValidationError": map[string]any{
			"allOf": []any{ref("Error"), map[string]any{
				"type": "object",
				"properties": map[string]any{
					"detail": map[string]any{"type": "array", "items": map[string]any{
						"type":     "object",
						"required": []any{"loc", "msg", "type"},
						"properties": map[string]any{
							"loc":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
							"msg":  map[string]any{"type": "string"},
							"type": map[string]any{"type": "string"},
						},
					}},
				},
			}},
		},
	}
	for _, m := range models {
		out[SchemaName(m.Slug)] = m.inputSchema()
		out[OutputSchemaName(m.Slug)] = m.outputSchema()
	}
	return out
}

func statusDocumentSchema() map[string]any {
	s := func(t any, desc string) map[string]any { return map[string]any{"type": t, "description": desc} }
	return map[string]any{
		"type":     "object",
		"required": []any{"status", "request_id"},
		"properties": map[string]any{
			"status":                map[string]any{"type": "string", "enum": []any{"IN_QUEUE", "IN_PROGRESS", "COMPLETED"}},
			"request_id":            s("string", ""),
			"queue_position":        s("integer", "While queued."),
			"logs":                  s("array", "Only when logs is 1 or true."),
			"metrics":               s("object", ""),
			"product":               map[string]any{"type": "string", "enum": []any{"photo", "music", "threed", "video", "external"}},
			"provider_job_id":       s([]any{"string", "null"}, "Id the job runs under once handed to its model."),
			"model":                 s("string", "The address that ran it."),
			"engine":                s([]any{"string", "null"}, ""),
			"attribution":           s([]any{"string", "null"}, ""),
			"credits_charged":       s("integer", ""),
			"credits_quoted":        s("integer", ""),
			"coverage":              s("object", "Present when a pass or promotion paid, or a held pass did not cover the job."),
			"credits_remaining":     s("integer", ""),
			"expected_seconds":      s("integer", ""),
			"give_up_after_seconds": s("integer", ""),
			"replayed":              s("boolean", ""),
			"waited":                s("boolean", ""),
			"timed_out":             s("boolean", ""),
			"wait_declined":         map[string]any{"type": "string", "enum": []any{"platform_busy", "product_busy", "account_busy"}},
			"warnings":              s("array", "Cross-field rules broken before their enforcement date (with a Deprecation header)."),
			"status_url":            s("string", ""),
			"response_url":          s("string", ""),
			"cancel_url":            s("string", ""),
			"message":               s("string", "On 202."),
			"docs":                  s("string", "On 202."),
		},
	}
}
