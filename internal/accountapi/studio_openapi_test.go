package accountapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/studio"
)

// TestSTU01_05_06_08_StudioInDocument proves STU-01, STU-05, STU-06, STU-08 and SCP-26 on the
// whole-service document (CAT-19): every studio route studioRoutes registers is described,
// with its scopes as bearer roles, its refusals limited to the statuses spec 01 lists, each
// refusal an Error body, the crdt_ack fields required with their ranges, and the live route
// answering 101 (a WebSocket upgrade) that also accepts the key in the query.
func TestSTU01_05_06_08_StudioInDocument(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	d := loadDocument(t, Document(cat))
	allowed := []string{"400", "401", "403", "404", "409", "413", "429", "500", "503"}
	type want struct {
		method, ok, schema string
		scopes             []string
		conflict           bool
	}
	for _, base := range []string{"/v1/studio/projects/{project}/brief", "/v1/studio/projects/{project}/canvases/{canvas}"} {
		routes := map[string][]want{
			base + "/state": {{http.MethodPost, "200", "CrdtAck", []string{"studio:write"}, true}},
			base:            {{http.MethodPost, "200", "CrdtAck", []string{"studio:write"}, true}, {http.MethodGet, "200", "CrdtState", []string{"studio:read", "studio:write"}, false}},
			base + "/live":  {{http.MethodGet, "101", "", []string{"studio:read", "studio:write"}, false}},
		}
		for path, ops := range routes {
			item := d.Paths.Find(path)
			if item == nil {
				t.Errorf("no path %s", path)
				continue
			}
			if len(item.Operations()) != len(ops) {
				t.Errorf("%s: %d operations, want %d", path, len(item.Operations()), len(ops))
			}
			for _, w := range ops {
				op := item.GetOperation(w.method)
				if op == nil {
					t.Errorf("%s %s missing", w.method, path)
					continue
				}
				checkStudioOperation(t, w.method+" "+path, op, w.ok, w.schema, w.scopes, w.conflict, allowed)
				var names []string
				for _, p := range op.Parameters {
					if p.Value.In == openapi3.ParameterInPath {
						names = append(names, p.Value.Name)
						if s := p.Value.Schema.Value; !s.Type.Is("string") || s.Pattern == "" {
							t.Errorf("%s %s: path parameter %s is not a constrained string", w.method, path, p.Value.Name)
						}
					}
				}
				if want := strings.Count(path, "{"); len(names) != want {
					t.Errorf("%s %s: path parameters %v", w.method, path, names)
				}
			}
		}
		if item := d.Paths.Find(base); item != nil && item.Get != nil && item.Get.Parameters.GetByInAndName("query", "state_vector") == nil {
			t.Errorf("GET %s: no state_vector query parameter", base)
		}
		if item := d.Paths.Find(base + "/live"); item != nil && item.Get != nil && item.Get.Parameters.GetByInAndName("header", "Upgrade") == nil {
			t.Errorf("GET %s/live: the upgrade is not described", base)
		}
	}
	ack := d.Components.Schemas["CrdtAck"].Value
	for _, f := range []string{"object", "doc", "rev", "state_vector", "bytes", "request_id"} {
		if !slices.Contains(ack.Required, f) {
			t.Errorf("CrdtAck: %s not required", f)
		}
	}
	if e := ack.Properties["object"].Value.Enum; len(e) != 1 || e[0] != "crdt_ack" {
		t.Errorf("CrdtAck object enum %v", e)
	}
	if b := ack.Properties["bytes"].Value; b.Max == nil || *b.Max != 2097152 || b.Min == nil || *b.Min != 0 {
		t.Errorf("CrdtAck bytes range %v..%v", b.Min, b.Max)
	}
	if r := ack.Properties["rev"].Value; r.Min == nil || *r.Min != 0 {
		t.Error("CrdtAck rev has no minimum 0")
	}
	if err := ack.VisitJSON(map[string]any{"object": "crdt_ack", "doc": "canvas:c1", "rev": 3.0, "state_vector": "AA==", "bytes": 1840.0, "request_id": "req_1"}); err != nil {
		t.Errorf("an acknowledgement as the route writes it does not validate: %v", err)
	}
	if err := ack.VisitJSON(map[string]any{"object": "crdt_ack", "doc": "folder", "rev": 3.0, "state_vector": "AA==", "bytes": 1840.0, "request_id": "req_1"}); err == nil {
		t.Error("a doc that is neither brief nor canvas:… validates")
	}
	state := d.Components.Schemas["StudioStateRequest"].Value
	if !slices.Equal(state.Required, []string{"update"}) || state.Properties["seed"] == nil {
		t.Errorf("StudioStateRequest required %v", state.Required)
	}
	save := d.Components.Schemas["StudioSaveRequest"].Value
	if !slices.Contains(save.Required, "rev") || !slices.Contains(save.Required, "update") {
		t.Errorf("StudioSaveRequest required %v", save.Required)
	}
	if s := d.Components.SecuritySchemes[studioTicketScheme]; s == nil || s.Value.In != "query" || s.Value.Name != "ticket" {
		t.Errorf("query ticket scheme %v", s)
	}
}

func checkStudioOperation(t *testing.T, name string, op *openapi3.Operation, ok, schema string, scopes []string, conflict bool, allowed []string) {
	t.Helper()
	if op.Security == nil || len(*op.Security) == 0 {
		t.Errorf("%s: no security", name)
	} else {
		var got []string
		for _, req := range *op.Security {
			for scheme, roles := range req {
				if scheme == "bearer" {
					got = append(got, roles...)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, scopes) {
			t.Errorf("%s: bearer scopes %v, want %v", name, got, scopes)
		}
	}
	for status, r := range op.Responses.Map() {
		if status == ok {
			mt := r.Value.Content.Get("application/json")
			if schema != "" && (mt == nil || mt.Schema.Ref != "#/components/schemas/"+schema) {
				t.Errorf("%s: %s is not %s", name, status, schema)
			}
			continue
		}
		if !slices.Contains(allowed, status) {
			t.Errorf("%s: status %s is not one spec 01 lists", name, status)
			continue
		}
		want := "#/components/schemas/Error"
		if status == "409" {
			want = "#/components/schemas/StudioRevisionConflict"
		}
		if mt := r.Value.Content.Get("application/json"); mt == nil || mt.Schema.Ref != want {
			t.Errorf("%s: %s does not reference %s", name, status, want)
		}
	}
	for _, s := range []string{"400", "401", "403", "404", "429", "500", "503"} {
		if op.Responses.Value(s) == nil {
			t.Errorf("%s: no %s", name, s)
		}
	}
	if (op.Responses.Value("409") != nil) != conflict {
		t.Errorf("%s: 409 described %v, want %v", name, op.Responses.Value("409") != nil, conflict)
	}
	if op.Responses.Value(ok) == nil {
		t.Errorf("%s: no %s", name, ok)
	}
}

// TestSTU01_08_StudioDocumentAgreesWithRoutes proves the document and studioRoutes describe
// the same surface: every studio operation in the document reaches the route registered for
// that method and path, and each registered pattern is documented once.
func TestSTU01_08_StudioDocumentAgreesWithRoutes(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	d := loadDocument(t, Document(cat))
	mux := http.NewServeMux()
	(&Handler{Gate: &httpapi.Gate{}, Studio: studio.NewService(studio.Config{})}).studioRoutes(mux)
	seen := map[string]bool{}
	for path, item := range d.Paths.Map() {
		if !strings.HasPrefix(path, "/v1/studio/") {
			continue
		}
		concrete := strings.NewReplacer("{project}", "launch", "{canvas}", "c1").Replace(path)
		for method := range item.Operations() {
			_, pattern := mux.Handler(httptest.NewRequest(method, concrete, nil))
			if pattern != method+" "+path {
				t.Errorf("%s %s reaches %q", method, path, pattern)
			}
			seen[pattern] = true
		}
	}
	// studioRoutes registers four routes for the brief, four for a canvas and the tickets.
	if len(seen) != 9 {
		t.Errorf("%d studio operations documented, want the 9 studioRoutes registers: %v", len(seen), seen)
	}
}
