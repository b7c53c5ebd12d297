package accountapi

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/modelexec/modelexec/internal/catalog"
)

// DocOption adjusts the whole-service document.
type DocOption func(*oaDocConfig)

type oaDocConfig struct{ server string }

// WithServer sets the one server entry (the public base URL of the account API, with nothing
// before /v1). Without it the entry is "/", the host that served the document.
func WithServer(url string) DocOption { return func(c *oaDocConfig) { c.server = url } }

// Document returns the whole-service OpenAPI 3.1.0 contract served at GET /v1/openapi.json:
// every route of the account API with its parameters, security (none on the catalogue, this
// document, the JWKS and the signed file links) and error responses, plus every model's queue
// and synchronous paths from the catalogue (those name their own host in a path-level servers
// entry). It is built once at start and served as static bytes (VER-04).
func Document(cat *catalog.Catalog, opts ...DocOption) []byte {
	cfg := oaDocConfig{server: "/"}
	for _, o := range opts {
		o(&cfg)
	}
	parts := cat.OpenAPIComponents()
	paths := oaAccountPaths(cat)
	maps.Copy(paths, oaChatPaths(cat))
	maps.Copy(paths, oaStudioPaths())
	for k, v := range parts.Paths {
		paths[k] = v
	}
	schemas := oaAccountSchemas(cat)
	maps.Copy(schemas, oaChatSchemas(cat))
	maps.Copy(schemas, oaStudioSchemas())
	for k, v := range parts.Schemas {
		if _, ok := schemas[k]; !ok {
			schemas[k] = v
		}
	}
	security := map[string]any{}
	maps.Copy(security, parts.SecuritySchemes)
	maps.Copy(security, oaStudioSecuritySchemes())
	if _, ok := security["bearer"]; !ok {
		security["bearer"] = map[string]any{"type": "http", "scheme": "bearer"}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "modelexec",
			"version":     "1.0.0",
			"description": "The whole contract of the model execution service: the account and catalogue API under /v1, and each model's queue and synchronous operations (on their own hosts).",
		},
		"servers":    []any{map[string]any{"url": cfg.server}},
		"paths":      paths,
		"components": map[string]any{"securitySchemes": security, "schemas": schemas},
		"security":   oaBearer,
		"tags": []any{
			map[string]any{"name": "account"}, map[string]any{"name": "catalogue"}, map[string]any{"name": "jobs"},
			map[string]any{"name": "uploads"}, map[string]any{"name": "webhooks"}, map[string]any{"name": "keys"},
			map[string]any{"name": "chat"}, map[string]any{"name": "studio"},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("accountapi: the OpenAPI document does not encode: " + err.Error()) // static data; a test builds it
	}
	return append(b, '\n')
}

var (
	oaBearer   = []any{map[string]any{"bearer": []any{}}}
	oaNoneAuth = []any{}
)

// oaErrs are error responses referencing the Error schema, one per status.
func oaErrs(statuses ...string) map[string]any {
	desc := map[string]string{
		"400": "Refused: a parameter or the body is invalid (see error).",
		"401": "No key, or the key is malformed, unknown, revoked or expired.",
		"402": "The job failed and was refunded (refunded): it has no assets.",
		"403": "The key lacks the scope, or the account is limited.",
		"404": "Not found (also for another account's resource).",
		"405": "The method is not the one the link was signed for (method_not_allowed).",
		"409": "Conflict with the resource's state.",
		"410": "Gone.",
		"413": "Too large: the body, or on GET /v1/usage the window (usage_window_too_large).",
		"429": "Rate limited (Retry-After).",
		"500": "Internal error.",
		"503": "Paused (api_disabled) or a dependency is unavailable.",
	}
	out := map[string]any{}
	for _, s := range statuses {
		out[s] = map[string]any{"description": desc[s], "content": oaJsonBody(oaSchemaRef("Error"))}
	}
	return out
}

// oaKeyed are the errors every keyed route can answer before it runs (the order of checks).
var oaKeyed = []string{"400", "401", "403", "413", "429", "500", "503"}

// oaPublic are the errors of a route that takes no key (Origin refusal, body size, pause, pace).
var oaPublic = []string{"400", "413", "429", "503"}

func oaSchemaRef(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func oaJsonBody(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func oaOk(desc, schema string) map[string]any {
	return map[string]any{"description": desc, "content": oaJsonBody(oaSchemaRef(schema))}
}

// oaOperation is one operation: ok responses merged over the error responses of statuses.
func oaOperation(id, tag, summary string, security []any, params []any, responses map[string]any, statuses ...string) map[string]any {
	r := oaErrs(statuses...)
	maps.Copy(r, responses)
	o := map[string]any{"operationId": id, "tags": []any{tag}, "summary": summary, "security": security, "responses": r}
	if len(params) > 0 {
		o["parameters"] = params
	}
	return o
}

func oaQueryParam(name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"name": name, "in": "query", "description": desc, "schema": schema}
}

func oaPathParam(name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"name": name, "in": "path", "required": true, "description": desc, "schema": schema}
}

func oaStr() map[string]any              { return map[string]any{"type": "string"} }
func oaInteger() map[string]any          { return map[string]any{"type": "integer"} }
func oaNullable(t string) map[string]any { return map[string]any{"type": []any{t, "null"}} }
func oaArrayOf(items any) map[string]any { return map[string]any{"type": "array", "items": items} }
func oaEnum(vals ...string) map[string]any {
	return map[string]any{"type": "string", "enum": oaAnys(vals)}
}
func oaDescribed(s map[string]any, d string) map[string]any {
	s["description"] = d
	return s
}

func oaAnys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func oaObject(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = oaAnys(required)
	}
	return o
}

func oaWithBody(o map[string]any, schema string) map[string]any {
	o["requestBody"] = map[string]any{"required": true, "content": oaJsonBody(oaSchemaRef(schema))}
	return o
}

// oaAccountPaths are the account API's routes (spec 01 "Account and catalogue routes").
func oaAccountPaths(cat *catalog.Catalog) map[string]any {
	var addresses []string
	for _, m := range cat.Models() {
		addresses = append(addresses, m.Address)
	}
	address := oaPathParam("address", "The model address, svc-serverless/<model_slug>; the slash is written as is.",
		map[string]any{"type": "string", "enum": oaAnys(addresses)})
	jobID := oaPathParam("id", "Job id (<product>_<minted reference>, unique across accounts).", oaStr())
	webhookID := oaPathParam("id", "Webhook endpoint id.", oaStr())
	getModels := oaOperation("listModels", "catalogue", "Model rows; any valid key, no scope.", oaBearer, []any{
		oaQueryParam("category", "Only the models of this task; an unknown one is 400 invalid_category (carrying category and categories).", oaEnum(cat.Categories()...)),
		oaQueryParam("expand", "Only openapi: fill each row's openapi_document; anything else is 400 invalid_expand (carrying expand).", oaEnum("openapi")),
		oaQueryParam("limit", "At most this many rows: 1 to 25 with expand=openapi (default 10), 1 to 100 without (default every row); past that 400 invalid_limit carrying max.",
			map[string]any{"type": "integer", "minimum": 1, "maximum": ListLimitMax}),
	}, map[string]any{"200": oaOk("The model rows in catalogue order.", "ModelList")}, oaKeyed...)

	return map[string]any{
		"/v1/me": map[string]any{"get": oaOperation("getMe", "account", "Account record of the caller; costs no credits.", oaBearer, nil,
			map[string]any{"200": oaOk("The account record.", "Account")}, oaKeyed...)},
		"/v1/catalogue": map[string]any{"get": oaOperation("getCatalogue", "catalogue", "The catalogue: each address and its state. No key.", oaNoneAuth, nil,
			map[string]any{"200": oaOk("The catalogue.", "Catalogue")}, oaPublic...)},
		"/v1/models": map[string]any{"get": getModels},
		"/v1/models/{address}": map[string]any{"get": oaOperation("getModel", "catalogue", "One model row; it prints the scope the address asks for. Any valid key, no scope.", oaBearer,
			[]any{address}, map[string]any{"200": oaOk("The model row.", "ModelRow")}, append(slices.Clone(oaKeyed), "404")...)},
		"/v1/models/{address}/openapi.json": map[string]any{"get": oaOperation("getModelOpenAPI", "catalogue", "One model's OpenAPI 3.1.0 contract (x-svc-* extensions included). Any valid key, no scope.", oaBearer,
			[]any{address}, map[string]any{"200": map[string]any{"description": "The model's OpenAPI document.",
				"content": oaJsonBody(map[string]any{"type": "object", "description": "An OpenAPI 3.1.0 document."})}}, append(slices.Clone(oaKeyed), "404")...)},
		"/v1/openapi.json": map[string]any{"get": oaOperation("getOpenAPI", "catalogue", "This document: static, served before any key check.", oaNoneAuth, nil,
			map[string]any{"200": map[string]any{"description": "This document.",
				"content": oaJsonBody(map[string]any{"type": "object", "description": "An OpenAPI 3.1.0 document."})}}, oaPublic...)},
		"/v1/jobs": map[string]any{"get": oaOperation("listJobs", "jobs", "The caller's jobs, newest first; scope jobs:read.", oaBearer, []any{
			oaQueryParam("before", "ISO 8601 timestamp from next_before: jobs created before it (else 400 invalid_before).", map[string]any{"type": "string", "format": "date-time"}),
			oaQueryParam("limit", "Page size 1 to 100 (else 400 invalid_limit carrying max).", map[string]any{"type": "integer", "minimum": 1, "maximum": 100}),
		}, map[string]any{"200": oaOk("A page of job records.", "JobList")}, oaKeyed...)},
		"/v1/jobs/{id}": map[string]any{"get": oaOperation("getJob", "jobs", "One job of the caller's account; scope jobs:read.", oaBearer, []any{jobID},
			map[string]any{"200": oaOk("The job record.", "Job")}, append(slices.Clone(oaKeyed), "404")...)},
		"/v1/jobs/{id}/assets": map[string]any{"get": oaOperation("getJobAssets", "jobs", "Signed asset URLs (valid 15 minutes); scope assets:read. 409 not_ready before a terminal status.", oaBearer, []any{jobID},
			map[string]any{"200": oaOk("The job's assets.", "AssetList")}, append(slices.Clone(oaKeyed), "402", "404", "409", "410")...)},
		"/v1/usage": map[string]any{"get": oaOperation("getUsage", "account", "Spend per key; scope jobs:read.", oaBearer, []any{
			oaQueryParam("window", "month (default), last_month, or 1m to 12m (the current month and the ones before it); more than 12 months 413 usage_window_too_large, anything else 400 invalid_input (allowed).", oaStr()),
		}, map[string]any{"200": oaOk("Spend per key over the window.", "Usage")}, oaKeyed...)},
		"/v1/usage/export": map[string]any{"get": oaOperation("exportUsage", "account",
			"Spend per UTC day, key and model as one CSV file; scope jobs:read. Windows as GET /v1/usage. A window holding more rows than one file is refused with 413 export_too_large (carrying window) before any row is sent.",
			oaBearer, []any{
				oaQueryParam("window", "month (default), last_month, or 1m to 12m; beyond 12 months 413 usage_window_too_large, anything else 400 invalid_input (allowed).", oaStr()),
				oaQueryParam("granularity", "day (default): one row per UTC day, key and model; job: one row per charge or refund entry, key by key, each key's in the order written.", oaEnum("day", "job")),
			}, map[string]any{"200": map[string]any{
				"description": "CSV (RFC 4180), attachment usage-<account>-<window>.csv (usage-<account>-<window>-jobs.csv for granularity=job). Header row date,key_id,model,jobs,credits_charged,credits_refunded,credits_net, rows ordered by date, key_id, model; for granularity=job time,key_id,model,job_id,kind,credits_charged,credits_refunded. Text cells starting with = + - @ are prefixed with a single quote.",
				"headers":     map[string]any{"Content-Disposition": map[string]any{"description": `attachment; filename="usage-<account>-<window>.csv"` + " (-jobs.csv for granularity=job)", "schema": oaStr()}},
				"content":     map[string]any{"text/csv": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "text/csv"}}},
			}}, oaKeyed...)},
		"/v1/uploads": map[string]any{"post": oaWithBody(oaOperation("createUpload", "uploads", "A signed URL to PUT bytes to, and the path to send as input; scope: the write scope of the target product.", oaBearer, nil,
			map[string]any{"201": oaOk("The upload: PUT the bytes to upload_url with the headers given; read_url is a signed GET link any url input takes. Both valid 15 minutes.", "Upload")}, oaKeyed...), "UploadRequest")},
		"/v1/webhooks": map[string]any{
			"get": oaOperation("listWebhooks", "webhooks", "The account's webhook endpoints; scope jobs:read.", oaBearer, nil,
				map[string]any{"200": oaOk("{oaObject: list, data: [webhook records]}.", "WebhookList")}, oaKeyed...),
			"post": oaWithBody(oaOperation("createWebhook", "webhooks", "Register an endpoint; the challenge runs at once. Scope webhooks:write.", oaBearer, nil,
				map[string]any{"201": oaOk("The webhook record (verified tells whether the challenge passed).", "Webhook")}, append(slices.Clone(oaKeyed), "409")...), "WebhookCreate"),
		},
		"/v1/webhooks/{id}": map[string]any{
			"post": oaOperation("verifyWebhook", "webhooks", "Re-run the challenge on the stored URL; 200 whether it passed or not (verified tells). Scope webhooks:write.", oaBearer, []any{webhookID},
				map[string]any{"200": oaOk("The webhook record.", "Webhook")}, append(slices.Clone(oaKeyed), "404", "409")...),
			"delete": oaOperation("deleteWebhook", "webhooks", "Delete the endpoint and its queued deliveries; existed false when already gone. Scope webhooks:write.", oaBearer, []any{webhookID},
				map[string]any{"200": oaOk("Deleted.", "WebhookDeleted")}, oaKeyed...),
		},
		"/.well-known/jwks.json": map[string]any{"get": oaOperation("getJWKS", "keys", "The oaPublic keys that sign events (Ed25519). No key.", oaNoneAuth, nil,
			map[string]any{"200": oaOk("The key set.", "JWKS")}, oaPublic...)},
		"/files/{key}": map[string]any{
			"parameters": []any{
				oaPathParam("key", "The oaObject key (a path; its slashes written as is).", oaStr()),
				oaQueryParam("method", "The method the link was signed for.", oaEnum("GET", "PUT")),
				oaQueryParam("expires", "Unix seconds the link stops working.", oaInteger()),
				oaQueryParam("ct", "The content type a PUT must carry.", oaStr()),
				oaQueryParam("max", "The most bytes a PUT may carry.", oaInteger()),
				oaQueryParam("sig", "The signature; it is the credential.", oaStr()),
			},
			"get": oaOperation("getFile", "uploads", "Read a signed file (assets, uploads).", oaNoneAuth, nil, map[string]any{"200": map[string]any{
				"description": "The bytes.", "content": map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}}}}},
				"403", "404", "410"),
			"put": map[string]any{"operationId": "putFile", "tags": []any{"uploads"}, "summary": "Write the bytes of a signed upload link.", "security": oaNoneAuth,
				"requestBody": map[string]any{"required": true, "content": map[string]any{
					"image/png":  map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "image/png"}},
					"image/jpeg": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "image/jpeg"}},
					"image/webp": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "image/webp"}},
				}},
				"responses": func() map[string]any {
					r := oaErrs("400", "403", "404", "405", "410", "413", "429", "500", "503")
					r["200"] = map[string]any{"description": "Stored."}
					return r
				}()},
		},
	}
}

// oaAccountSchemas are the account API's component schemas; shapes the spec leaves "not shown"
// are designed here and documented by this contract.
func oaAccountSchemas(cat *catalog.Catalog) map[string]any {
	states := oaEnum(string(catalog.Connected), string(catalog.Described), string(catalog.Paused))
	var addresses []string
	for _, m := range cat.Models() {
		addresses = append(addresses, m.Address)
	}
	dateTime := map[string]any{"type": "string", "format": "date-time"}
	nullableTime := map[string]any{"type": []any{"string", "null"}, "format": "date-time"}
	webhookStatus := oaEnum("pending", "active", "disabled", "dead")
	return map[string]any{
		"Error": oaObject([]string{"error", "error_type", "message", "retry", "charged", "docs", "request_id"}, map[string]any{
			"error":      oaDescribed(oaStr(), "The code; match on this, never on message."),
			"error_type": oaStr(),
			"message":    oaStr(),
			"retry":      oaEnum("same_key", "after_retry_after", "new_key", "poll_first", "never"),
			"charged":    map[string]any{"oneOf": []any{oaEnum("no", "refunded", "stands", "unknown"), map[string]any{"type": "boolean"}}},
			"docs":       oaDescribed(oaStr(), "Link to the code's entry."),
			"request_id": oaStr(),
			"detail": oaDescribed(oaArrayOf(oaObject([]string{"loc", "msg", "type"}, map[string]any{
				"loc": oaArrayOf(map[string]any{"type": []any{"string", "integer"}}), "msg": oaStr(), "type": oaStr(),
			})), "Queue hosts: the violations, loc [body] when no field is named."),
		}),
		"Account": oaObject([]string{"object", "id", "plan", "credits", "key", "request_id"}, map[string]any{
			"object": oaEnum("account"), "id": oaStr(), "plan": oaStr(),
			"credits": oaObject([]string{"balance", "monthly_allowance", "period"}, map[string]any{
				"balance": oaInteger(), "monthly_allowance": oaInteger(), "period": oaDescribed(oaStr(), "Year-month, e.g. 2026-11."),
			}),
			"key": oaObject([]string{"id", "scopes", "credit_ceiling", "credits_spent_period"}, map[string]any{
				"id": oaDescribed(oaStr(), "12-character oaPublic key id."), "scopes": oaArrayOf(oaStr()),
				"credit_ceiling":       oaDescribed(oaInteger(), "0 means no per-key cap."),
				"credits_spent_period": oaInteger(),
			}),
			"request_id": oaStr(),
		}),
		"Catalogue": oaObject([]string{"object", "addresses", "models", "categories", "request_id"}, map[string]any{
			"object":    oaEnum("catalogue"),
			"addresses": oaDescribed(map[string]any{"type": "object", "additionalProperties": states}, "Address → state."),
			"models": oaArrayOf(oaObject([]string{"address", "label", "name", "product", "category", "state"}, map[string]any{
				"address": oaEnum(addresses...), "label": oaStr(), "name": oaStr(), "product": oaStr(), "category": oaStr(), "state": states,
			})),
			"categories": oaArrayOf(map[string]any{"type": "object", "description": "A task of ?category=."}),
			"request_id": oaStr(),
		}),
		"ModelRow": oaObject([]string{"object", "id", "slug", "product", "category", "state", "scope", "scopes", "lifecycle", "price", "openapi"}, map[string]any{
			"object": oaEnum("model"), "id": oaDescribed(oaEnum(addresses...), "The address."), "slug": oaStr(), "label": oaStr(), "name": oaStr(),
			"product": oaStr(), "category": oaStr(), "state": states, "hosted_by": oaStr(),
			"scope":            oaDescribed(oaStr(), "The scope the address asks for."),
			"scopes":           oaDescribed(oaArrayOf(oaStr()), "Every scope that reaches it."),
			"engine":           oaNullable("string"),
			"attribution":      oaNullable("string"),
			"expected_seconds": oaInteger(),
			"lifecycle": oaObject([]string{"queue", "stall_ceiling_seconds"}, map[string]any{
				"queue": oaEnum(catalog.QueueRefuses), "stall_ceiling_seconds": oaInteger(), "max_wait_seconds": oaInteger(), "give_up_after_seconds": oaInteger(),
			}),
			"price":            oaDescribed(map[string]any{"type": "object"}, "As x-svc-price: kind quoted, rule {unit, counting, bands}, metered true."),
			"openapi":          oaDescribed(oaStr(), "Path of the model's OpenAPI document."),
			"openapi_document": oaDescribed(map[string]any{"type": "object"}, "The model's OpenAPI document; only with expand=openapi."),
			"request_id":       oaDescribed(oaStr(), "On GET /v1/models/{address}."),
		}),
		"ModelList": oaObject([]string{"object", "data", "request_id"}, map[string]any{
			"object": oaEnum("list"), "data": oaArrayOf(oaSchemaRef("ModelRow")), "request_id": oaStr(),
		}),
		"Job": oaObject([]string{"id", "object", "product", "status", "credits_charged", "credits_reserved"}, map[string]any{
			"id": oaDescribed(oaStr(), "<product>_<minted reference>, unique across accounts; a replay answers the first request's id."), "object": oaEnum("job"), "product": oaStr(),
			"status":     oaEnum("queued", "running", "succeeded", "failed", "cancelled"),
			"error_code": oaNullable("string"), "credits_charged": oaDescribed(oaInteger(), "After any refund."),
			"credits_reserved": oaDescribed(oaInteger(), "Taken at charge."), "credits_quoted": oaInteger(),
			"model":              oaDescribed(oaStr(), "The address that ran it."),
			"queue_request_id":   oaDescribed(oaStr(), "The job's queue request id, minted at submit: the {request_id} of its queue URLs and the request_id of its status documents and per-request webhook."),
			"request_id":         oaDescribed(oaStr(), "On GET /v1/jobs/{id}: this HTTP request's id, the same as X-Request-Id (absent on a list item)."),
			"idempotency_key":    oaStr(),
			"created_at":         dateTime,
			"started_at":         nullableTime,
			"finished_at":        nullableTime,
			"poll_after_seconds": oaDescribed(oaInteger(), "0 once terminal."),
			"coverage":           map[string]any{"type": []any{"object", "null"}},
			"status_url":         oaStr(),
			"response_url":       oaStr(),
		}),
		"JobList": oaObject([]string{"object", "data", "has_more"}, map[string]any{
			"object": oaEnum("list"), "data": oaArrayOf(oaSchemaRef("Job")), "has_more": map[string]any{"type": "boolean"},
			"next_before": oaDescribed(nullableTime, "Pass as before for the next page; null on the last."), "request_id": oaStr(),
		}),
		"AssetList": oaObject([]string{"object", "job_id", "data"}, map[string]any{
			"object": oaEnum("list"), "job_id": oaStr(), "status": oaStr(),
			"data": oaArrayOf(oaObject([]string{"object", "url"}, map[string]any{
				"object": oaEnum("asset"), "url": oaDescribed(oaStr(), "Signed; valid 15 minutes."), "content_type": oaStr(),
				"bytes": oaInteger(), "expires_at": dateTime,
			})),
			"request_id": oaStr(),
		}),
		"Usage": oaObject([]string{"object", "window", "from", "to", "data", "total"}, map[string]any{
			"object": oaEnum("usage"), "window": oaStr(), "from": dateTime, "to": dateTime,
			"data": oaArrayOf(oaObject([]string{"key_id", "credits_charged", "credits_refunded", "net", "jobs"}, map[string]any{
				"object": oaEnum("key_usage"), "key_id": oaStr(), "credits_charged": oaInteger(), "credits_refunded": oaInteger(),
				"net": oaInteger(), "jobs": oaInteger(),
			})),
			"total": oaObject([]string{"credits_charged", "credits_refunded", "net", "jobs"}, map[string]any{
				"credits_charged": oaInteger(), "credits_refunded": oaInteger(), "net": oaInteger(), "jobs": oaInteger(),
			}),
			"request_id": oaStr(),
		}),
		"UploadRequest": oaObject([]string{"content_type"}, map[string]any{
			"content_type": oaEnum("image/png", "image/jpeg", "image/webp"), "filename": oaStr(),
			"product": oaDescribed(map[string]any{"type": "string", "default": "photo"}, "The target product; its write scope is required (400 unknown_product otherwise)."),
		}),
		"Upload": oaObject([]string{"object", "path", "upload_url", "method", "read_url", "content_type", "max_bytes", "expires_at"}, map[string]any{
			"object": oaStr(), "path": oaDescribed(oaStr(), "Send this as the model input."), "upload_url": oaStr(), "method": oaEnum("PUT"),
			"headers": map[string]any{"type": "object", "additionalProperties": oaStr()}, "read_url": oaStr(), "content_type": oaStr(),
			"filename": oaStr(), "product": oaStr(), "max_bytes": oaInteger(), "expires_at": dateTime, "request_id": oaStr(),
		}),
		"WebhookCreate": oaObject([]string{"url"}, map[string]any{
			"url":      oaDescribed(map[string]any{"type": "string", "format": "uri", "maxLength": 2000}, "Absolute https URL, no user-info, a publicly reachable host."),
			"products": oaDescribed(oaArrayOf(oaStr()), "Empty or omitted: every product; an unknown name is 400 invalid_products."),
		}),
		"Webhook": oaObject([]string{"id", "object", "url", "status", "verified"}, map[string]any{
			"id": oaStr(), "object": oaEnum("webhook"), "url": oaStr(), "products": map[string]any{"type": []any{"array", "null"}, "items": oaStr()},
			"status": webhookStatus, "created_at": dateTime, "verified": map[string]any{"type": "boolean"}, "verified_at": nullableTime,
			"verify_keys": oaDescribed(oaStr(), "URL of the oaPublic key set."), "signature_algorithm": oaEnum("EdDSA"),
			"consecutive_failures": oaInteger(), "last_success_at": nullableTime, "last_failure_at": nullableTime,
			"last_status_code": oaNullable("integer"), "disabled_reason": map[string]any{"type": []any{"string", "null"}, "enum": []any{"too_many_failures", "endpoint_gone", nil}},
			"verification": oaDescribed(map[string]any{"type": "object"}, "Present when the challenge failed: a reason and the first 200 characters of the response."),
			"request_id":   oaStr(),
		}),
		"WebhookList": oaObject([]string{"object", "data"}, map[string]any{
			"object": oaEnum("list"), "data": oaArrayOf(oaSchemaRef("Webhook")), "request_id": oaStr(),
		}),
		"WebhookDeleted": oaObject([]string{"id", "existed"}, map[string]any{
			"id": oaStr(), "object": oaStr(), "deleted": map[string]any{"type": "boolean"}, "existed": map[string]any{"type": "boolean"}, "request_id": oaStr(),
		}),
		"JWKS": oaObject([]string{"keys"}, map[string]any{
			"keys": oaArrayOf(oaObject([]string{"kty", "crv", "alg", "use", "x", "kid"}, map[string]any{
				"kty": oaEnum("OKP"), "crv": oaEnum("Ed25519"), "alg": oaEnum("EdDSA"), "use": oaEnum("sig"), "x": oaStr(), "kid": oaStr(),
			})),
		}),
	}
}
