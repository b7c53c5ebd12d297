package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// sseEvents reads a Responses stream's events: each event's data, in order.
func sseEvents(t *testing.T, res *http.Response) []map[string]any {
	t.Helper()
	defer res.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, ev)
	}
	return out
}

// outputTypes is a response object's output item types.
func outputTypes(resp map[string]any) []string {
	items, _ := resp["output"].([]any)
	var out []string
	for _, it := range items {
		m, _ := it.(map[string]any)
		out = append(out, fmt.Sprint(m["type"]))
	}
	return out
}

// TestCHAT01_ResponsesToolRoundTrip proves CHAT-01 for the Responses protocol's function
// calling, as the openai SDK's round trip sends it: a streamed answer's output is the
// non-streamed answer's (an answer that only calls a tool is only its function_call item,
// no empty message, and its events open no message item); and a response's output sent back
// as input reaches the upstream as one assistant message per answer, its text and its
// tool_calls together, then the tool message.
func TestCHAT01_ResponsesToolRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		u := newMockUpstream(t)
		m := newUpstreamHarness(t, db, u)
		tools := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
		for _, c := range []struct {
			input string
			types string
		}{
			{"[tool] weather?", "function_call"},
			{"[texttool] weather?", "message function_call"},
			{"hello", "message"},
		} {
			body := fmt.Sprintf(`{"model":"kimi","input":%q,"tools":%s}`, c.input, tools)
			whole := m.call(http.MethodPost, m.api.URL+"/compat/v1/responses", body)
			if whole.Code != http.StatusOK || strings.Join(outputTypes(whole.Body), " ") != c.types {
				t.Fatalf("%q not streamed: %d output %v, want %s", c.input, whole.Code, outputTypes(whole.Body), c.types)
			}
			req, _ := http.NewRequest(http.MethodPost, m.api.URL+"/compat/v1/responses", strings.NewReader(strings.TrimSuffix(body, "}")+`,"stream":true}`))
			req.Header.Set("Authorization", "Bearer "+m.key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			events := sseEvents(t, res)
			var added []string
			var final map[string]any
			for _, ev := range events {
				switch ev["type"] {
				case "response.output_item.added":
					it, _ := ev["item"].(map[string]any)
					added = append(added, fmt.Sprintf("%v@%v", it["type"], ev["output_index"]))
				case "response.completed":
					final, _ = ev["response"].(map[string]any)
				}
			}
			if final == nil || strings.Join(outputTypes(final), " ") != c.types {
				t.Fatalf("%q streamed: output %v, want %s (events %v)", c.input, outputTypes(final), c.types, events)
			}
			var want []string
			for i, typ := range strings.Fields(c.types) {
				want = append(want, fmt.Sprintf("%s@%d", typ, i))
			}
			if strings.Join(added, " ") != strings.Join(want, " ") {
				t.Fatalf("%q streamed: items added %v, want %v", c.input, added, want)
			}
		}

		// The round trip: a streamed call-only answer's output, then a text-and-call answer's.
		for _, input := range []string{"[tool] weather?", "[texttool] weather?"} {
			first := m.call(http.MethodPost, m.api.URL+"/compat/v1/responses", fmt.Sprintf(`{"model":"kimi","input":%q,"tools":%s}`, input, tools))
			output, _ := json.Marshal(first.Body["output"])
			items := strings.TrimSuffix(strings.TrimPrefix(string(output), "["), "]")
			next := fmt.Sprintf(`{"model":"kimi","tools":%s,"input":[{"role":"user","content":%q},%s,{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`,
				tools, input, items)
			if r := m.call(http.MethodPost, m.api.URL+"/compat/v1/responses", next); r.Code != http.StatusOK {
				t.Fatalf("round trip of %q: %d %s", input, r.Code, r.Raw)
			}
			msgs := u.lastMessages(t)
			var roles []string
			for _, msg := range msgs {
				roles = append(roles, fmt.Sprint(msg["role"]))
			}
			if strings.Join(roles, " ") != "user assistant tool" {
				t.Fatalf("round trip of %q reached the upstream as %v, want user, one assistant, tool: %v", input, roles, msgs)
			}
			asst := msgs[1]
			calls, _ := asst["tool_calls"].([]any)
			wantText := map[string]any{"[tool] weather?": nil, "[texttool] weather?": "Checking both."}[input]
			if len(calls) != 1 || asst["content"] != wantText {
				t.Fatalf("round trip of %q: assistant message %v, want content %v with its one call", input, asst, wantText)
			}
		}
	})
}
