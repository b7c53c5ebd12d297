package accountapi

import (
	"maps"
	"slices"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/studio"
)

// studioTicketScheme names the ticket the live route takes in its query (a browser's WebSocket
// cannot send an Authorization header, and an API key never travels in a URL).
const studioTicketScheme = "studioTicket"

// oaStudioSecuritySchemes are the schemes the studio operations name beyond bearer.
func oaStudioSecuritySchemes() map[string]any {
	return map[string]any{studioTicketScheme: map[string]any{
		"type": "apiKey", "in": "query", "name": "ticket",
		"description": "A single-use ticket from POST /v1/studio/projects/{project}/tickets (valid 30 s, one connection to that project, the minting key's rights); accepted by the studio live routes only. An API key in the URL (key=) is refused 400 invalid_body.",
	}}
}

// oaScoped lists one security requirement per scheme and accepted scope: HTTP bearer
// requirements may name roles (OpenAPI 3.1), and the scopes are those roles.
func oaScoped(schemes []string, scopes ...auth.Scope) []any {
	var out []any
	for _, s := range schemes {
		for _, sc := range scopes {
			out = append(out, map[string]any{s: []any{string(sc)}})
		}
	}
	return out
}

// oaStudioPaths are the studio document routes of studioRoutes: for the brief and for each
// canvas, the merge, the whole-document save, the read and the live WebSocket (docs/studio.md).
func oaStudioPaths() map[string]any {
	project := oaPathParam("project", "The project id: 1 to 128 bytes with no '/', ':' or control character (anything else is 404 not_found). Projects are per account.", oaStudioID())
	canvas := oaPathParam("canvas", "The canvas id: 1 to 128 bytes with no '/', ':' or control character (anything else is 404 not_found).", oaStudioID())
	bearer := []string{"bearer"}
	writeSec := oaScoped(bearer, auth.StudioWrite)
	readSec := oaScoped(bearer, auth.StudioRead, auth.StudioWrite)
	liveSec := oaScoped([]string{"bearer", studioTicketScheme}, auth.StudioRead, auth.StudioWrite)
	writeScopes := []any{string(auth.StudioWrite)}
	readScopes := []any{string(auth.StudioRead), string(auth.StudioWrite)}
	readErrs := append(slices.Clone(oaKeyed), "404")
	writeErrs := append(slices.Clone(readErrs), "409")

	paths := map[string]any{}
	for _, d := range []struct{ base, id, what string }{
		{"/v1/studio/projects/{project}/brief", "Brief", "the brief"},
		{"/v1/studio/projects/{project}/canvases/{canvas}", "Canvas", "a canvas"},
	} {
		params := []any{project}
		if d.id == "Canvas" {
			params = append(params, canvas)
		}
		state := oaWithBody(oaOperation("mergeStudio"+d.id, "studio",
			"Merge a Yjs update into "+d.what+" over what other windows wrote; scope studio:write; write bucket; spends nothing. An update the server already has changes nothing.",
			writeSec, params, map[string]any{"200": oaOk("The acknowledgement (crdt_ack).", "CrdtAck")}, writeErrs...), "StudioStateRequest")
		oaStudioRefusals(state, "409 revision_conflict: seed while something is stored; the body carries the stored document to load instead.")
		state["x-svc-scopes"] = writeScopes

		save := oaWithBody(oaOperation("saveStudio"+d.id, "studio",
			"Whole-document save of "+d.what+": replaces the stored document when rev is still the stored revision; scope studio:write; write bucket; spends nothing. Live connections to the document close with code 4000.",
			writeSec, params, map[string]any{"200": oaOk("The acknowledgement (crdt_ack).", "CrdtAck")}, writeErrs...), "StudioSaveRequest")
		oaStudioRefusals(save, "409 revision_conflict: rev is not the stored revision; the body carries the stored document: load it, apply your changes and save again.")
		save["x-svc-scopes"] = writeScopes

		read := oaOperation("readStudio"+d.id, "studio",
			"Read "+d.what+", whole or only what a state vector lacks; scope studio:read or studio:write; read bucket; spends nothing. A document never written, in a project never written too, reads as the empty document at rev 0 (generation 0), as the live route syncs it.",
			readSec, append(slices.Clone(params),
				oaQueryParam("state_vector", "Base64 of Y.encodeStateVector(doc): the answer then holds only what that state lacks. Not the base64 of a state vector: 400 invalid_body.",
					map[string]any{"type": "string", "contentEncoding": "base64"})),
			map[string]any{"200": oaOk("The document, or the part the state vector lacks (crdt_state).", "CrdtState")}, readErrs...)
		read["x-svc-scopes"] = readScopes

		live := oaOperation("liveStudio"+d.id, "studio",
			"Live collaboration on "+d.what+": a WebSocket upgrade speaking the y-websocket protocol (y-protocols sync and awareness). A server-side client sends its key in the Authorization header and no Origin; a browser presents a ticket from an origin on the operator's allow-list (--studio-origins; any other origin is 403 browser_origin_refused). The handshake makes the usual checks (read bucket, studio:read or studio:write) and answers a refusal as a JSON error without upgrading; each update a client sends then needs studio:write and is admitted against the connection's edit budget (600 operations and 4194304 bytes per 10 s, refilled evenly; sync replies without content, a connection's first sync reply and awareness spend nothing).",
			liveSec, append(slices.Clone(params),
				oaQueryParam("ticket", "A ticket from POST /v1/studio/projects/{project}/tickets: single-use, valid 30 s. Mint a fresh one for every connection, reconnects included.", oaStr()),
				oaQueryParam("generation", "The generation of the copy the client holds (crdt_state.generation). Without it, the client's first sync places it: a copy holding anything a whole-document save dropped is closed with 4002, any other takes the stored generation.", map[string]any{"type": "integer", "minimum": 0}),
				map[string]any{"name": "Upgrade", "in": "header", "required": true, "description": "A WebSocket handshake (with Connection: Upgrade); a plain GET is 400 invalid_body.", "schema": oaEnum("websocket")},
			),
			map[string]any{"101": map[string]any{
				"description": "Switching Protocols: the connection speaks y-websocket binary messages. Every update is stored before it is sent to the other clients; awareness is relayed and never stored. A refused update ends the connection with its reason in the close frame: 1007 malformed message, 1009 document over 2097152 bytes, 1013 edit budget spent, 1008 a client that cannot keep up, 1011 server fault, 4000 document replaced by a whole-document save, 4001 the key was revoked or expired or the account banned, suspended or limited (checked every second and before each write; the reason starts with the error code), 4002 the client's copy is of an older generation. Messages over 2 MiB + 64 KiB are refused.",
			}}, readErrs...)
		live["x-svc-scopes"] = readScopes
		live["x-svc-websocket"] = map[string]any{
			"protocol":    "y-websocket",
			"max_message": studio.MaxBytes + 64<<10,
			"close_codes": map[string]any{"1007": "malformed message", "1008": "too slow to keep up", "1009": "document too large", "1011": "server fault", "1013": "edit budget spent",
				"4000": "document replaced", "4001": "credential no longer stands", "4002": "older generation"},
			"write_scopes":       writeScopes,
			"query_ticket_param": "ticket",
		}

		paths[d.base+"/state"] = map[string]any{"post": state}
		paths[d.base] = map[string]any{"post": save, "get": read}
		paths[d.base+"/live"] = map[string]any{"get": live}
	}
	ticket := oaOperation("mintStudioTicket", "studio",
		"Mint a ticket that opens one live connection to the project (brief or canvas) within 30 s, with this key's studio rights: what a backend hands its page, so the page never holds an API key. Scope studio:read or studio:write; read bucket; spends nothing.",
		readSec, []any{project}, map[string]any{"200": oaOk("The ticket (studio_ticket).", "StudioTicket")}, oaKeyed...)
	ticket["x-svc-scopes"] = readScopes
	paths["/v1/studio/projects/{project}/tickets"] = map[string]any{"post": ticket}
	return paths
}

// oaStudioRefusals gives the studio writes their own 400, 409 and 413 descriptions; the 409
// body carries the stored document (StudioRevisionConflict).
func oaStudioRefusals(op map[string]any, conflict string) {
	r := op["responses"].(map[string]any)
	r["400"] = map[string]any{"description": "Refused, nothing changed: invalid_body when update is missing, not a string, not base64 or not a Yjs update (the message says where reading stopped), or on the save when rev is missing; or another check every route makes (see error).",
		"content": oaJsonBody(oaSchemaRef("Error"))}
	r["409"] = map[string]any{"description": conflict, "content": oaJsonBody(oaSchemaRef("StudioRevisionConflict"))}
	r["413"] = map[string]any{"description": "413 body_too_large: the document would pass 2097152 bytes (limit_bytes 2097152, bytes what it would have weighed), or the body is over 1 MiB (limit_bytes 1048576); nothing changed.",
		"content": oaJsonBody(oaSchemaRef("Error"))}
}

func oaStudioID() map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "pattern": "^[^/:\\x00-\\x1f\\x7f-\\x9f]+$"}
}

// oaStudioSchemas are the studio bodies: the brief state acknowledgement of spec 01 and the
// shapes docs/studio.md designs for the save, the read and the conflict.
func oaStudioSchemas() map[string]any {
	base64 := func(d string) map[string]any {
		return oaDescribed(map[string]any{"type": "string", "contentEncoding": "base64"}, d)
	}
	ack := map[string]any{
		"object":       oaEnum("crdt_ack"),
		"doc":          oaDescribed(map[string]any{"type": "string", "pattern": "^(brief|canvas:.+)$"}, "brief, or canvas: followed by the canvas id."),
		"rev":          oaDescribed(map[string]any{"type": "integer", "minimum": 0}, "How many writes have changed the document."),
		"state_vector": base64("Base64 of the stored document's Yjs state vector (Y.decodeStateVector reads it)."),
		"bytes":        oaDescribed(map[string]any{"type": "integer", "minimum": 0, "maximum": studio.MaxBytes}, "The stored document's size."),
		"request_id":   oaStr(),
	}
	ackRequired := []string{"object", "doc", "rev", "state_vector", "bytes", "request_id"}
	state := maps.Clone(ack)
	state["object"] = oaEnum("crdt_state")
	state["generation"] = oaDescribed(map[string]any{"type": "integer", "minimum": 0}, "How many whole-document saves replaced the document; a live client that loads this copy connects with generation set to it.")
	state["update"] = base64("Base64 of a Yjs update (format v1): the whole document, or what the state_vector given lacks.")
	conflict := maps.Clone(ack)
	delete(conflict, "object")
	delete(conflict, "request_id")
	conflict["update"] = base64("Base64 of the whole stored document: load it instead.")
	return map[string]any{
		"CrdtAck":   oaObject(ackRequired, ack),
		"CrdtState": oaObject(append(slices.Clone(ackRequired), "generation", "update"), state),
		"StudioTicket": oaObject([]string{"object", "ticket", "project", "expires_at", "expires_in", "scopes", "request_id"}, map[string]any{
			"object":     oaEnum("studio_ticket"),
			"ticket":     oaDescribed(oaStr(), "Give it to the live route as ?ticket=; it opens one connection."),
			"project":    oaStr(),
			"expires_at": oaDescribed(map[string]any{"type": "string", "format": "date-time"}, "Unused after this, it is refused 401 key_expired."),
			"expires_in": oaDescribed(map[string]any{"type": "integer"}, "Seconds: 30."),
			"scopes":     oaDescribed(map[string]any{"type": "array", "items": oaStr()}, "The studio scopes of the minting key, which the connection has."),
			"request_id": oaStr(),
		}),
		"StudioStateRequest": oaObject([]string{"update"}, map[string]any{
			"update": base64("Base64 of a Yjs update, format v1 (standard alphabet, padding optional; URL-safe accepted)."),
			"seed":   oaDescribed(map[string]any{"type": "boolean"}, "The first write of a document that existed before it was shared: accepted only while nothing is stored (else 409 revision_conflict carrying the stored document)."),
		}),
		"StudioSaveRequest": oaObject([]string{"update", "rev"}, map[string]any{
			"update": base64("Base64 of the whole document as one update (Y.encodeStateAsUpdate(doc))."),
			"rev":    oaDescribed(map[string]any{"type": "integer", "minimum": 0}, "The revision the caller's copy was loaded at (0 when nothing is stored)."),
		}),
		"StudioRevisionConflict": map[string]any{
			"description": "409 revision_conflict: the error and the stored document.",
			"allOf":       []any{oaSchemaRef("Error"), oaObject([]string{"doc", "rev", "state_vector", "bytes", "update"}, conflict)},
		},
	}
}
