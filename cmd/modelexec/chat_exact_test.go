package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	pngenc "image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
)

// TestJOB28_IdsUniqueAcrossAccounts (issue 28 item 8, DESIGN 37): two accounts sending the same
// Idempotency-Key make two jobs with two ids, on /compat/v1, /v1/chat and /v1/embeddings; the
// replay stays the account's own, answering its first call's id without a second charge.
func TestJOB28_IdsUniqueAcrossAccounts(t *testing.T) {
	w := newChatWorld(t, nil)
	a, b := w.account(auth.Ultimate, 1000), w.account(auth.Ultimate, 1000)
	keyA, keyB := w.pool(a, 8), w.pool(b, 8)
	body := `{"model":"qwen","messages":[{"role":"user","content":"hello"}]}`
	first := w.do("POST", "/compat/v1/chat/completions", keyA(), body, "Idempotency-Key", "shared-1")
	other := w.do("POST", "/compat/v1/chat/completions", keyB(), body, "Idempotency-Key", "shared-1")
	if first.status != 200 || other.status != 200 {
		t.Fatalf("calls: %d %s / %d %s", first.status, first.raw, other.status, other.raw)
	}
	if first.body["id"] == other.body["id"] || first.header.Get("X-Job-Id") == other.header.Get("X-Job-Id") {
		t.Fatalf("two accounts, one id: %v / %v (jobs %s, %s)", first.body["id"], other.body["id"], first.header.Get("X-Job-Id"), other.header.Get("X-Job-Id"))
	}
	if other.header.Get("Idempotent-Replayed") != "" || strings.Contains(first.header.Get("X-Job-Id"), "shared-1") {
		t.Fatalf("second account replayed or id built from the key: %v, %s", other.header, first.header.Get("X-Job-Id"))
	}
	balance := w.balance(a)
	again := w.do("POST", "/compat/v1/chat/completions", keyA(), body, "Idempotency-Key", "shared-1")
	if again.status != 200 || again.body["id"] != first.body["id"] || again.header.Get("Idempotent-Replayed") != "true" || w.balance(a) != balance {
		t.Fatalf("replay in the first account: %d %v %s, balance %d → %d", again.status, again.header, again.raw, balance, w.balance(a))
	}
	// A streamed replay answers the first call's id and text too.
	streamed := w.do("POST", "/compat/v1/chat/completions", keyA(), strings.TrimSuffix(body, "}")+`,"stream":true}`, "Idempotency-Key", "shared-1")
	if streamed.status != 200 || !strings.Contains(streamed.raw, `"id":"`+first.body["id"].(string)+`"`) || !strings.HasSuffix(streamed.raw, "data: [DONE]\n\n") {
		t.Fatalf("streamed replay: %d %s", streamed.status, streamed.raw)
	}

	// Turns: the same key in two accounts' conversations makes two jobs.
	var turnJobs []string
	for _, key := range []func() string{keyA, keyB} {
		conv := w.do("POST", "/v1/chat/conversations", key(), `{"title":"ids"}`)
		r := w.do("POST", "/v1/chat", key(), `{"conversation_id":"`+conv.body["id"].(string)+`","message":"hi","idempotency_key":"turn-shared"}`)
		if r.status != 200 {
			t.Fatalf("turn: %d %s", r.status, r.raw)
		}
		turnJobs = append(turnJobs, r.body["job_id"].(string))
	}
	if turnJobs[0] == turnJobs[1] {
		t.Fatalf("two accounts' turns share job %s", turnJobs[0])
	}

	// Embeddings, on the native route.
	var embJobs []string
	for _, key := range []func() string{keyA, keyB} {
		r := w.do("POST", "/v1/embeddings", key(), `{"input":"hello","idempotency_key":"emb-shared"}`)
		if r.status != 200 {
			t.Fatalf("embeddings: %d %s", r.status, r.raw)
		}
		embJobs = append(embJobs, r.body["job_id"].(string))
	}
	if embJobs[0] == embJobs[1] || embJobs[0] == "" {
		t.Fatalf("two accounts' embeddings share job %q", embJobs[0])
	}
}

// TestCHAT13_NotConfiguredWithoutReferenceModels (issue 28 item 9, DESIGN 36): the reference
// language models run only under --dev or --reference-models. Without them and without an
// upstream, chat, embeddings and /compat/v1 answer 503 chat_not_configured and charge nothing;
// a model on an upstream still answers; --dev turns the reference models on.
func TestCHAT13_NotConfiguredWithoutReferenceModels(t *testing.T) {
	nothing := newChatWorldWith(t, nil, func(c *ServeCmd) { c.OpenAIUpstream = nil })
	acct := nothing.account(auth.Ultimate, 1000)
	key := nothing.pool(acct, 8)
	chatBody := `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`
	refused := []struct{ method, path, body string }{
		{"GET", "/compat/v1/models", ""},
		{"GET", "/compat/v1/models/qwen", ""},
		{"POST", "/compat/v1/chat/completions", chatBody},
		{"POST", "/compat/v1/chat/completions", `{"model":"qwen","messages":"not even valid"}`},
		{"POST", "/compat/v1/completions", `{"model":"qwen","prompt":"hi"}`},
		{"POST", "/compat/v1/responses", `{"model":"qwen","input":"hi"}`},
		{"POST", "/compat/v1/embeddings", `{"model":"embed-small","input":"hi"}`},
		{"POST", "/v1/chat/conversations", `{"title":"t"}`},
		{"POST", "/v1/chat", `{"conversation_id":"conv_x","message":"hi"}`},
		{"POST", "/v1/embeddings", `{"input":"hi"}`},
	}
	for _, c := range refused {
		r := nothing.do(c.method, c.path, key(), c.body)
		code := compatCode(r)
		if !strings.HasPrefix(c.path, "/compat") {
			code, _ = r.body["error"].(string)
		}
		if r.status != 503 || code != "chat_not_configured" || !strings.Contains(r.raw, "not configured on this deployment") {
			t.Fatalf("%s %s with nothing configured: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
	if got := nothing.balance(acct); got != 1000 {
		t.Fatalf("refusals charged: balance %d", got)
	}

	// kimi on an upstream answers; the reference models stay off.
	upstream := newChatWorldWith(t, nil, func(*ServeCmd) {})
	key = upstream.pool(upstream.account(auth.Ultimate, 1000), 8)
	if r := upstream.do("POST", "/compat/v1/chat/completions", key(), `{"model":"kimi","messages":[{"role":"user","content":"hi"}]}`); r.status != 200 {
		t.Fatalf("kimi on its upstream: %d %s", r.status, r.raw)
	}
	for _, c := range []struct{ path, body string }{{"/compat/v1/chat/completions", chatBody}, {"/compat/v1/embeddings", `{"model":"embed-small","input":"hi"}`}} {
		if r := upstream.do("POST", c.path, key(), c.body); r.status != 503 || compatCode(r) != "chat_not_configured" {
			t.Fatalf("%s without the reference models: %d %s", c.path, r.status, r.raw)
		}
	}
	if r := upstream.do("GET", "/compat/v1/models", key(), ""); r.status != 200 {
		t.Fatalf("models with kimi configured: %d %s", r.status, r.raw)
	}

	// --dev runs the reference models.
	dev := newChatWorldWith(t, nil, func(c *ServeCmd) { c.Dev = true })
	key = dev.pool(dev.account(auth.Ultimate, 1000), 8)
	if r := dev.do("POST", "/compat/v1/chat/completions", key(), chatBody); r.status != 200 {
		t.Fatalf("qwen under --dev: %d %s", r.status, r.raw)
	}
}

// sseEvents reads a stream of named events: each event's name and its JSON data.
func sseEvents(t *testing.T, raw string) (names []string, data []map[string]any) {
	t.Helper()
	for _, block := range strings.Split(strings.TrimSpace(raw), "\n\n") {
		var name string
		var d map[string]any
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				if err := json.Unmarshal([]byte(v), &d); err != nil {
					t.Fatalf("event %s: %v in %q", name, err, v)
				}
			}
		}
		names, data = append(names, name), append(data, d)
	}
	return names, data
}

// TestCHAT01_ResponsesStream (issue 28 item 6): /compat/v1/responses with stream: true answers
// the protocol's events in order, each named as its type, numbered from 0; the deltas add up to
// the finished text, response.completed carries the whole response and its usage, and the call
// is charged as the job says. Out of output budget it ends in response.incomplete; a failing
// upstream ends in an error event inside the 200, refunded in full.
func TestCHAT01_ResponsesStream(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	before := w.balance(acct)
	r := w.do("POST", "/compat/v1/responses", key(), `{"model":"qwen","input":[{"role":"user","content":[{"type":"input_text","text":"Stream a reply"}]}],"instructions":"Be brief","stream":true}`)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", r.status, r.raw)
	}
	names, data := sseEvents(t, r.raw)
	head := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if len(names) < len(head)+len(tail)+2 || !slices.Equal(names[:len(head)], head) || !slices.Equal(names[len(names)-len(tail):], tail) {
		t.Fatalf("events %v", names)
	}
	var text strings.Builder
	for i, d := range data {
		if d["type"] != names[i] || num(d["sequence_number"]) != int64(i) {
			t.Fatalf("event %d %s: %v", i, names[i], d)
		}
		if i >= len(head) && i < len(names)-len(tail) {
			if names[i] != "response.output_text.delta" || d["item_id"] != "msg_"+r.header.Get("X-Job-Id") {
				t.Fatalf("event %d: %s %v", i, names[i], d)
			}
			text.WriteString(d["delta"].(string))
		}
	}
	done := data[len(names)-4]
	final := data[len(names)-1]["response"].(map[string]any)
	out := final["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	if done["text"] != text.String() || out["text"] != text.String() || !strings.Contains(text.String(), "reference model") {
		t.Fatalf("deltas %q, done %q, completed %q", text.String(), done["text"], out["text"])
	}
	created := data[0]["response"].(map[string]any)
	if final["status"] != "completed" || created["status"] != "in_progress" || final["id"] != created["id"] || final["id"] != "resp_"+r.header.Get("X-Job-Id") {
		t.Fatalf("created %v, completed %v", created, final)
	}
	usage := final["usage"].(map[string]any)
	charged := num(w.job(key(), r.header.Get("X-Job-Id"))["credits_charged"])
	if num(usage["output_tokens"]) == 0 || charged <= 0 || before-w.balance(acct) != charged {
		t.Fatalf("usage %v, charged %d, balance %d → %d", usage, charged, before, w.balance(acct))
	}

	r = w.do("POST", "/compat/v1/responses", key(), `{"model":"qwen","input":"Write at length about streams","max_output_tokens":3,"stream":true}`)
	names, data = sseEvents(t, r.raw)
	if last := data[len(data)-1]; names[len(names)-1] != "response.incomplete" || last["response"].(map[string]any)["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
		t.Fatalf("out of budget: %v %s", names, r.raw)
	}

	before = w.balance(acct)
	r = w.do("POST", "/compat/v1/responses", key(), `{"model":"kimi","input":"fail now","stream":true}`)
	names, data = sseEvents(t, r.raw)
	if r.status != 200 || names[len(names)-1] != "error" || data[len(data)-1]["code"] != "chat_start_failed" || slices.Contains(names, "response.completed") {
		t.Fatalf("failing upstream: %d %v %s", r.status, names, r.raw)
	}
	if w.balance(acct) != before {
		t.Fatalf("a failed streamed response charged: %d → %d", before, w.balance(acct))
	}
}

// TestCHAT_SettingsPassedToUpstream (issue 28 item 5): the protocol's settings reach an
// OpenAI-compatible upstream as sent (temperature, top_p, max_tokens, stop, seed, penalties,
// response_format as JSON mode or a JSON schema, the Responses protocol's text.format turned
// into chat completions' form); a reference model refuses JSON output with OpenAI's 400 and its
// param, and out-of-range settings are refused, nothing charged.
func TestCHAT_SettingsPassedToUpstream(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	sent := func() map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(w.upstream.body.Load().([]byte), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	r := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"kimi","messages":[{"role":"user","content":"hi"}],"temperature":0.3,"top_p":0.9,`+
		`"max_tokens":40,"stop":["END"],"seed":42,"frequency_penalty":0.5,"presence_penalty":-0.5,"response_format":{"type":"json_object"}}`)
	if r.status != 200 {
		t.Fatalf("kimi with settings: %d %s", r.status, r.raw)
	}
	got := sent()
	want := map[string]any{"temperature": 0.3, "top_p": 0.9, "max_tokens": 40.0, "seed": 42.0, "frequency_penalty": 0.5, "presence_penalty": -0.5}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("upstream got %s = %v, want %v (%v)", k, got[k], v, got)
		}
	}
	if stop, _ := got["stop"].([]any); len(stop) != 1 || stop[0] != "END" || got["response_format"].(map[string]any)["type"] != "json_object" {
		t.Fatalf("upstream got stop %v, response_format %v", got["stop"], got["response_format"])
	}
	schema := `{"type":"json_schema","name":"colour","schema":{"type":"object","properties":{"name":{"type":"string"}}},"strict":true}`
	r = w.do("POST", "/compat/v1/responses", key(), `{"model":"kimi","input":"a colour","text":{"format":`+schema+`}}`)
	if r.status != 200 {
		t.Fatalf("responses with a schema: %d %s", r.status, r.raw)
	}
	rf, _ := sent()["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "colour" || js["strict"] != true || js["schema"] == nil {
		t.Fatalf("upstream got response_format %v", rf)
	}

	before := w.balance(acct)
	msg := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ path, body, param string }{
		{"/compat/v1/chat/completions", `{"model":"qwen",` + msg + `,"response_format":{"type":"json_object"}}`, "response_format"},
		{"/compat/v1/responses", `{"model":"qwen","input":"x","text":{"format":{"type":"json_object"}}}`, "response_format"},
		{"/compat/v1/chat/completions", `{"model":"kimi",` + msg + `,"response_format":{"type":"xml"}}`, "response_format.type"},
		{"/compat/v1/chat/completions", `{"model":"kimi",` + msg + `,"top_p":1.5}`, "top_p"},
		{"/compat/v1/chat/completions", `{"model":"kimi",` + msg + `,"presence_penalty":-3}`, "presence_penalty"},
		{"/compat/v1/chat/completions", `{"model":"kimi",` + msg + `,"seed":1.5}`, "seed"},
		{"/compat/v1/responses", `{"model":"kimi","input":"x","tools":[{"type":"web_search"}]}`, "tools[0]"},
		{"/compat/v1/responses", `{"model":"kimi","input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
	} {
		r := w.do("POST", c.path, key(), c.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != 400 || e["param"] != c.param {
			t.Fatalf("%s: %d %s, want 400 with param %s", c.body, r.status, r.raw, c.param)
		}
	}
	if w.balance(acct) != before {
		t.Fatalf("refusals charged: %d → %d", before, w.balance(acct))
	}
}

// TestCHAT_FailureIsASentence (issue 28 item 3): a run that fails underneath (an upstream that
// cannot be reached, one that answers outside the protocol) is shown as a code and a sentence,
// on the failed job and in the compat answer, refunded; the error chain (addresses, the
// dialer's and decoder's wording) stays in the log.
func TestCHAT_FailureIsASentence(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there any more
	w := newChatWorldWith(t, nil, func(c *ServeCmd) {
		c.ReferenceModels = true
		c.OpenAIUpstream = []string{"kimi=" + closed.URL + "/v1"}
	})
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	chain := []string{"dial tcp", "connect:", "127.0.0.1", "Post ", "refused", "upstream", "json:", "%!"}
	r := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"kimi","messages":[{"role":"user","content":"hi"}]}`)
	e, _ := r.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if r.status != 500 || compatCode(r) != "chat_start_failed" || !strings.Contains(msg, "could not be reached") {
		t.Fatalf("unreachable upstream: %d %s", r.status, r.raw)
	}
	conv := w.do("POST", "/v1/chat/conversations", key(), `{"title":"fails"}`)
	turn := w.do("POST", "/v1/chat", key(), `{"conversation_id":"`+conv.body["id"].(string)+`","model":"kimi","message":"hi"}`)
	jobID, _ := turn.body["job_id"].(string)
	if turn.status != 500 || turn.body["error"] != "chat_start_failed" || jobID == "" {
		t.Fatalf("turn on an unreachable upstream: %d %s", turn.status, turn.raw)
	}
	job := w.job(key(), jobID)
	// The job's message, as the console shows it beside the code.
	var jobMsg string
	if err := w.db.SQL().QueryRow(`SELECT error_message FROM jobs WHERE id = $1`, jobID).Scan(&jobMsg); err != nil {
		t.Fatal(err)
	}
	msg += " " + turn.body["message"].(string)
	for _, s := range chain {
		if strings.Contains(msg, s) || strings.Contains(jobMsg, s) {
			t.Fatalf("%q shown: answers %q, job %q", s, msg, jobMsg)
		}
	}
	if job["status"] != "failed" || job["error_code"] != "run_failed" || jobMsg != "The model server could not be reached." || w.balance(acct) != 1000 {
		t.Fatalf("job %v (%q), balance %d", job, jobMsg, w.balance(acct))
	}
}

// TestSCP07_TextKeysUploadChatFiles (issue 28 item 10): a text:write key may POST /v1/uploads
// for chat (product "chat"): images, audio, video and documents, each PUT checked against its
// declared type; it reaches no other product's uploads, and no other key reaches chat's. The
// image products keep their three image types (ACC-17).
func TestSCP07_TextKeysUploadChatFiles(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	// Keys in turn: the write bucket's per-instance fuse admits 10 requests a second per key.
	var texts []string
	for range 4 {
		texts = append(texts, w.key(acct, []auth.Scope{auth.TextWrite}, nil))
	}
	n := 0
	textKey := func() string { n++; return texts[n%len(texts)] }
	image := w.key(acct, []auth.Scope{auth.ImageWrite}, nil)
	put := func(up reply, data []byte) int {
		t.Helper()
		u, err := url.Parse(up.body["upload_url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(up.body["method"].(string), w.api.URL+u.RequestURI(), bytes.NewReader(data))
		for k, v := range up.body["headers"].(map[string]any) {
			req.Header.Set(k, v.(string))
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, c := range []struct {
		contentType string
		good, bad   []byte
	}{
		{"application/pdf", []byte("%PDF-1.7\n1 0 obj\n"), []byte("<html><script>x</script>")},
		{"text/plain", []byte("Notes for the chat, in plain text: ünïcode too.\n"), []byte("text\x00with a NUL")},
		{"audio/mpeg", []byte("ID3\x04\x00\x00\x00\x00\x00\x00"), []byte("%PDF-1.7")},
		{"video/webm", []byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81}, []byte("RIFF....WAVE")},
		{"image/png", wholePNG(t), []byte("GIF89a")},
	} {
		body := `{"content_type":"` + c.contentType + `","product":"chat","filename":"f"}`
		up := w.do("POST", "/v1/uploads", textKey(), body)
		if up.status != 201 || up.body["content_type"] != c.contentType || up.body["product"] != "chat" {
			t.Fatalf("%s upload: %d %s", c.contentType, up.status, up.raw)
		}
		if got := put(up, c.good); got/100 != 2 {
			t.Fatalf("%s: PUT of matching bytes answered %d", c.contentType, got)
		}
		if got := put(w.do("POST", "/v1/uploads", textKey(), body), c.bad); got/100 == 2 {
			t.Fatalf("%s: PUT of other bytes answered %d", c.contentType, got)
		}
	}
	r := w.do("POST", "/v1/uploads", textKey(), `{"content_type":"application/zip","product":"chat"}`)
	accepted, _ := r.body["accepted"].([]any)
	if r.status != 400 || r.body["error"] != "unknown_content_type" || !slices.Contains(accepted, any("application/pdf")) {
		t.Fatalf("zip for chat: %d %s", r.status, r.raw)
	}
	for _, c := range []struct{ key, body string }{
		{textKey(), `{"content_type":"image/png","product":"photo"}`},
		{textKey(), `{"content_type":"image/png"}`},
		{image, `{"content_type":"application/pdf","product":"chat"}`},
	} {
		if r := w.do("POST", "/v1/uploads", c.key, c.body); r.status != 403 || r.body["error"] != "insufficient_scope" {
			t.Fatalf("%s: %d %s, want 403 insufficient_scope", c.body, r.status, r.raw)
		}
	}
	r = w.do("POST", "/v1/uploads", image, `{"content_type":"audio/mpeg","product":"photo"}`)
	if r.status != 400 || r.body["error"] != "unknown_content_type" || len(r.body["accepted"].([]any)) != 3 {
		t.Fatalf("audio for photo: %d %s", r.status, r.raw)
	}
}

// TestSCP07_ChatReadsUploadedImages (issue 28 item 10): a chat call may show the model an image
// (an upload's read_url, or any http(s) or data: URL) as chat completions' image_url part or the
// Responses protocol's input_image; it reaches an upstream whose model reads images (the
// operator's `images` setting) as an image_url part holding the image itself (fetched by the
// service, so the upstream fetches nothing), counted in the quote; an image that cannot be
// fetched is the model's refusal, refunded. A model that reads
// no images (a reference model, an upstream not said to) refuses it with OpenAI's 400 and the
// message's param, nothing charged.
func TestSCP07_ChatReadsUploadedImages(t *testing.T) {
	w := newChatWorldWith(t, nil, func(c *ServeCmd) {
		c.ReferenceModels = true
		c.OpenAIUpstream[0] += ",images"
	})
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	up := w.do("POST", "/v1/uploads", w.key(acct, []auth.Scope{auth.TextWrite}, nil), `{"content_type":"image/png","product":"chat"}`)
	readURL, _ := up.body["read_url"].(string)
	if up.status != 201 || readURL == "" {
		t.Fatalf("upload: %d %s", up.status, up.raw)
	}
	var png bytes.Buffer
	if err := pngenc.Encode(&png, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	link, _ := url.Parse(up.body["upload_url"].(string))
	req, _ := http.NewRequest("PUT", w.api.URL+link.RequestURI(), bytes.NewReader(png.Bytes()))
	req.Header.Set("Content-Type", "image/png")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode/100 != 2 {
		t.Fatalf("PUT: %v %v", res, err)
	}
	inlined := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png.Bytes())
	withImage := `{"model":"kimi","messages":[{"role":"user","content":[{"type":"text","text":"What is in this picture?"},` +
		`{"type":"image_url","image_url":{"url":"` + readURL + `"}}]}]}`
	r := w.do("POST", "/compat/v1/chat/completions", key(), withImage)
	if r.status != 200 {
		t.Fatalf("image to kimi: %d %s", r.status, r.raw)
	}
	var sent struct {
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(w.upstream.body.Load().([]byte), &sent); err != nil || len(sent.Messages) != 1 || len(sent.Messages[0].Content) != 2 {
		t.Fatalf("upstream got %s (%v)", w.upstream.body.Load(), err)
	}
	if img, _ := sent.Messages[0].Content[1]["image_url"].(map[string]any); sent.Messages[0].Content[1]["type"] != "image_url" || img["url"] != inlined {
		t.Fatalf("upstream image part %v", sent.Messages[0].Content[1])
	}
	plain := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"kimi","messages":[{"role":"user","content":"What is in this picture?"}]}`)
	if q, p := num(w.job(key(), r.header.Get("X-Job-Id"))["credits_quoted"]), num(w.job(key(), plain.header.Get("X-Job-Id"))["credits_quoted"]); q < p+3 {
		t.Fatalf("an image adds %d credits to the quote (%d, %d), want its 1,000 tokens' 3", q-p, q, p)
	}
	r = w.do("POST", "/compat/v1/responses", key(), `{"model":"kimi","input":[{"role":"user","content":[{"type":"input_image","image_url":"`+readURL+`"}]}]}`)
	sent.Messages = nil
	_ = json.Unmarshal(w.upstream.body.Load().([]byte), &sent)
	if r.status != 200 || len(sent.Messages) != 1 || len(sent.Messages[0].Content) != 1 || sent.Messages[0].Content[0]["image_url"].(map[string]any)["url"] != inlined {
		t.Fatalf("responses input_image: %d %s; upstream got %s", r.status, r.raw, w.upstream.body.Load())
	}

	before := w.balance(acct)
	r = w.do("POST", "/compat/v1/chat/completions", key(), strings.Replace(withImage, readURL, "https://127.0.0.1/private.png", 1))
	if r.status != 422 || w.balance(acct) != before {
		t.Fatalf("an image that cannot be fetched: %d %s, balance %d → %d", r.status, r.raw, before, w.balance(acct))
	}
	for _, c := range []struct{ body, param string }{
		{strings.Replace(withImage, `"kimi"`, `"qwen"`, 1), "messages[0].content"},
		{`{"model":"kimi","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}]}`, ""},
		{`{"model":"kimi","messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://x.example/a.png"}}]}]}`, "messages[0].content"},
	} {
		r := w.do("POST", "/compat/v1/chat/completions", key(), c.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != 400 || (c.param != "" && e["param"] != c.param) {
			t.Fatalf("%s: %d %s, want 400 with param %q", c.body, r.status, r.raw, c.param)
		}
	}
	if w.balance(acct) != before {
		t.Fatalf("refusals charged: %d → %d", before, w.balance(acct))
	}
	plainWorld := newChatWorld(t, nil)
	r = plainWorld.do("POST", "/compat/v1/chat/completions", plainWorld.key(plainWorld.account(auth.Ultimate, 100), nil, nil), withImage)
	if e, _ := r.body["error"].(map[string]any); r.status != 400 || e["param"] != "messages[0].content" {
		t.Fatalf("an upstream not said to read images: %d %s", r.status, r.raw)
	}
}

// TestCHAT_ToolsPassedToUpstream (issue 28 item 5): function tools reach an upstream whose
// model calls them (the operator's `tools` setting); its calls come back as the protocol's
// tool_calls (content null, finish_reason tool_calls), whole or streamed (pieces put together,
// sent in one delta); the tool's answer goes back to the upstream with the assistant's calls
// and the tool_call_id. A model that calls no tools refuses them with OpenAI's 400 and param,
// nothing charged; tool messages without their call are refused too.
func TestCHAT_ToolsPassedToUpstream(t *testing.T) {
	w := newChatWorldWith(t, nil, func(c *ServeCmd) {
		c.ReferenceModels = true
		c.OpenAIUpstream[0] += ",tools"
	})
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	ask := `{"model":"kimi","messages":[{"role":"user","content":"Please call a tool for Paris"}],` + tools + `,"tool_choice":"auto"`
	wantCall := func(calls any) {
		t.Helper()
		list, _ := calls.([]any)
		c, _ := list[0].(map[string]any)
		fn, _ := c["function"].(map[string]any)
		if len(list) != 1 || c["id"] != "call_1" || fn["name"] != "get_weather" || fn["arguments"] != `{"city":"Paris"}` {
			t.Fatalf("tool calls %v", calls)
		}
	}
	r := w.do("POST", "/compat/v1/chat/completions", key(), ask+`}`)
	choice, _ := r.body["choices"].([]any)
	if r.status != 200 || len(choice) != 1 {
		t.Fatalf("tool call: %d %s", r.status, r.raw)
	}
	msg := choice[0].(map[string]any)["message"].(map[string]any)
	if choice[0].(map[string]any)["finish_reason"] != "tool_calls" || msg["content"] != nil {
		t.Fatalf("tool call answer %s", r.raw)
	}
	wantCall(msg["tool_calls"])
	var sent map[string]any
	_ = json.Unmarshal(w.upstream.body.Load().([]byte), &sent)
	if tl, _ := sent["tools"].([]any); len(tl) != 1 || sent["tool_choice"] != "auto" {
		t.Fatalf("upstream got tools %v, tool_choice %v", sent["tools"], sent["tool_choice"])
	}

	r = w.do("POST", "/compat/v1/chat/completions", key(), ask+`,"stream":true}`)
	var streamed any
	finish := ""
	for _, d := range sseData(r.raw) {
		var c map[string]any
		if json.Unmarshal([]byte(d), &c) != nil {
			continue
		}
		for _, ch := range c["choices"].([]any) {
			ch := ch.(map[string]any)
			if tc, ok := ch["delta"].(map[string]any)["tool_calls"]; ok {
				streamed = tc
			}
			if f, ok := ch["finish_reason"].(string); ok {
				finish = f
			}
		}
	}
	if r.status != 200 || finish != "tool_calls" || !strings.HasSuffix(r.raw, "data: [DONE]\n\n") {
		t.Fatalf("streamed tool call: %d %s", r.status, r.raw)
	}
	wantCall(streamed)
	if streamed.([]any)[0].(map[string]any)["index"] != 0.0 {
		t.Fatalf("streamed tool call without its index: %v", streamed)
	}

	follow := `{"model":"kimi",` + tools + `,"messages":[{"role":"user","content":"Please call a tool for Paris"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"18 degrees, sunny"}]}`
	r = w.do("POST", "/compat/v1/chat/completions", key(), follow)
	if r.status != 200 {
		t.Fatalf("tool answer: %d %s", r.status, r.raw)
	}
	var back struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    any             `json:"content"`
			ToolCalls  json.RawMessage `json:"tool_calls"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(w.upstream.body.Load().([]byte), &back)
	if len(back.Messages) != 3 || back.Messages[1].Content != nil || !strings.Contains(string(back.Messages[1].ToolCalls), "call_1") ||
		back.Messages[2].Role != "tool" || back.Messages[2].ToolCallID != "call_1" || back.Messages[2].Content != "18 degrees, sunny" {
		t.Fatalf("upstream got %s", w.upstream.body.Load())
	}

	before := w.balance(acct)
	for _, c := range []struct{ body, param string }{
		{strings.Replace(ask, `"kimi"`, `"qwen"`, 1) + `}`, "tools"},
		{`{"model":"kimi","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, "tool_choice"},
		{`{"model":"kimi","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`, "tools[0]"},
		{`{"model":"kimi","messages":[{"role":"user","content":"hi"},{"role":"tool","content":"x"}]}`, "messages[1].tool_call_id"},
		{`{"model":"kimi","messages":[{"role":"user","content":"hi","tool_calls":[]},{"role":"user","content":"x","tool_calls":[{}]}]}`, "messages[1].tool_calls"},
	} {
		r := w.do("POST", "/compat/v1/chat/completions", key(), c.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != 400 || e["param"] != c.param {
			t.Fatalf("%s: %d %s, want 400 with param %s", c.body, r.status, r.raw, c.param)
		}
	}
	if w.balance(acct) != before {
		t.Fatalf("refusals charged: %d → %d", before, w.balance(acct))
	}
}

// TestCHAT_ResponsesTools (issue 28 item 5): the Responses protocol's function tools reach an
// upstream that calls them, in chat completions' form; its calls answer as function_call output
// items, whole or streamed as their events (output_item.added, function_call_arguments.delta
// and .done, output_item.done); function_call and function_call_output input items go back to
// the upstream as the assistant's tool_calls and a tool message.
func TestCHAT_ResponsesTools(t *testing.T) {
	w := newChatWorldWith(t, nil, func(c *ServeCmd) {
		c.ReferenceModels = true
		c.OpenAIUpstream[0] += ",tools"
	})
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	ask := `{"model":"kimi","input":"Please call a tool for Paris",` + tools
	wantCall := func(item map[string]any) {
		t.Helper()
		if item["type"] != "function_call" || item["call_id"] != "call_1" || item["name"] != "get_weather" || item["arguments"] != `{"city":"Paris"}` {
			t.Fatalf("function call item %v", item)
		}
	}
	r := w.do("POST", "/compat/v1/responses", key(), ask+`}`)
	out, _ := r.body["output"].([]any)
	if r.status != 200 || len(out) != 1 {
		t.Fatalf("responses tool call: %d %s", r.status, r.raw)
	}
	wantCall(out[0].(map[string]any))
	var sent struct {
		Tools []struct {
			Type     string         `json:"type"`
			Function map[string]any `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(w.upstream.body.Load().([]byte), &sent)
	if len(sent.Tools) != 1 || sent.Tools[0].Type != "function" || sent.Tools[0].Function["name"] != "get_weather" || sent.Tools[0].Function["parameters"] == nil {
		t.Fatalf("upstream got %s", w.upstream.body.Load())
	}

	r = w.do("POST", "/compat/v1/responses", key(), ask+`,"stream":true}`)
	names, data := sseEvents(t, r.raw)
	i := slices.Index(names, "response.function_call_arguments.delta")
	if r.status != 200 || i < 1 || names[i-1] != "response.output_item.added" || names[i+1] != "response.function_call_arguments.done" ||
		names[i+2] != "response.output_item.done" || names[len(names)-1] != "response.completed" {
		t.Fatalf("streamed tool call events %v", names)
	}
	wantCall(data[i+2]["item"].(map[string]any))
	final := data[len(data)-1]["response"].(map[string]any)["output"].([]any)
	// A call-only answer streams as it answers whole: one function_call item, no empty message.
	if len(final) != 1 || data[i]["delta"] != `{"city":"Paris"}` || num(data[i]["output_index"]) != 0 {
		t.Fatalf("streamed: delta %v, final output %v", data[i], final)
	}
	wantCall(final[0].(map[string]any))

	follow := `{"model":"kimi",` + tools + `,"input":[{"role":"user","content":"Please call a tool for Paris"},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"18 degrees, sunny"}]}`
	r = w.do("POST", "/compat/v1/responses", key(), follow)
	var back struct {
		Messages []struct {
			Role       string           `json:"role"`
			Content    any              `json:"content"`
			ToolCalls  []map[string]any `json:"tool_calls"`
			ToolCallID string           `json:"tool_call_id"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(w.upstream.body.Load().([]byte), &back)
	if r.status != 200 || len(back.Messages) != 3 || len(back.Messages[1].ToolCalls) != 1 || back.Messages[1].ToolCalls[0]["id"] != "call_1" ||
		back.Messages[2].Role != "tool" || back.Messages[2].ToolCallID != "call_1" || back.Messages[2].Content != "18 degrees, sunny" {
		t.Fatalf("follow-up: %d %s; upstream got %s", r.status, r.raw, w.upstream.body.Load())
	}
	before := w.balance(acct)
	if r := w.do("POST", "/compat/v1/responses", key(), strings.Replace(ask, `"kimi"`, `"qwen"`, 1)+`}`); r.status != 400 || r.body["error"].(map[string]any)["param"] != "tools" {
		t.Fatalf("tools on a reference model: %d %s", r.status, r.raw)
	}
	if w.balance(acct) != before {
		t.Fatal("a refusal charged")
	}
}

// wholePNG is a readable 2×2 PNG: uploads are decoded in full before they are kept.
func wholePNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := pngenc.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
