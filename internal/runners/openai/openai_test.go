package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/runners"
)

func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"bad key"}}`)
			return
		}
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch r.URL.Path {
		case "/v1/chat/completions":
			if req["model"] != "Qwen/Qwen2.5-7B" {
				t.Errorf("request %v", req)
			}
			msgs := req["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)["content"].(string)
			if strings.Contains(last, "bad") {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":{"message":"could not parse","code":"invalid_request"}}`)
				return
			}
			if req["stream"] != true {
				if _, ok := req["stream_options"]; ok {
					t.Errorf("stream_options sent without a stream: %v", req)
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{"Hel", "lo", "!"} {
				fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", d)
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		case "/v1/embeddings":
			in := req["input"].([]any)
			var data []string
			for i := len(in) - 1; i >= 0; i-- { // out of order: the runner puts them back
				data = append(data, fmt.Sprintf(`{"index":%d,"embedding":[%d,0]}`, i, i))
			}
			fmt.Fprintf(w, `{"data":[%s],"usage":{"prompt_tokens":5}}`, strings.Join(data, ","))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The runner streams when someone reads the text as it is written (env.Text) and asks for the
// whole answer otherwise; both settle to the upstream's own counts.
func TestChatStreamsFromUpstream(t *testing.T) {
	srv := upstream(t)
	rn, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "Qwen/Qwen2.5-7B", Kind: catalog.KindChat})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(catalog.ChatInput{Messages: []catalog.Message{{Role: "user", Content: "hi"}}, MaxTokens: 50, PromptTokens: 7})
	var deltas []string
	res, err := rn.Run(context.Background(), runners.Job{Input: in}, runners.Env{Text: func(d string) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Document["content"] != "Hello!" || len(deltas) != 3 || res.Document["finish_reason"] != "stop" {
		t.Fatalf("document %v, deltas %q", res.Document, deltas)
	}
	if res.Metrics["input_tokens"] != 9 || res.Metrics["output_tokens"] != 3 {
		t.Fatalf("usage %v: want the upstream's own counts", res.Metrics)
	}

	res, err = rn.Run(context.Background(), runners.Job{Input: in}, runners.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Document["content"] != "Hello!" || res.Document["finish_reason"] != "stop" || res.Metrics["output_tokens"] != 3 {
		t.Fatalf("whole answer: document %v metrics %v", res.Document, res.Metrics)
	}

	in, _ = json.Marshal(catalog.ChatInput{Messages: []catalog.Message{{Role: "user", Content: "bad"}}, MaxTokens: 5})
	_, err = rn.Run(context.Background(), runners.Job{Input: in}, runners.Env{})
	var ref *runners.Refusal
	if !errors.As(err, &ref) || ref.Code != "invalid_input" {
		t.Fatalf("upstream 400: err = %v, want a refusal invalid_input", err)
	}

	bad, _ := New(Config{BaseURL: srv.URL + "/v1", APIKey: "wrong", Model: "m", Kind: catalog.KindChat})
	_, err = bad.Run(context.Background(), runners.Job{Input: in}, runners.Env{})
	var fail *runners.Failure
	if !errors.As(err, &fail) || fail.Retryable {
		t.Fatalf("upstream 401: err = %v, want a failure not retryable", err)
	}
}

// Whatever was asked, the runner reads the kind of answer the upstream sent (some servers always
// stream, some never do, some name no content type), and an answer outside the protocol fails
// the run: never a success with empty content.
func TestChatReadsWhatTheUpstreamSends(t *testing.T) {
	var answer func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w) }))
	t.Cleanup(srv.Close)
	rn, _ := New(Config{BaseURL: srv.URL, Model: "m", Kind: catalog.KindChat})
	in, _ := json.Marshal(catalog.ChatInput{Messages: []catalog.Message{{Role: "user", Content: "hi"}}, MaxTokens: 50, PromptTokens: 7})
	whole := `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}`
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" there\"},\"finish_reason\":\"length\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"
	send := func(ct, body string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			} else {
				w.Header()["Content-Type"] = nil // no sniffing by the test server either
			}
			fmt.Fprint(w, body)
		}
	}
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"json", send("application/json", whole)},
		{"json without a content type", send("", "\n "+whole)},
		{"stream", send("text/event-stream", stream)},
		{"stream without a content type", send("", stream)},
		{"stream named text/plain", send("text/plain; charset=utf-8", stream)},
	} {
		for _, streaming := range []bool{false, true} {
			answer = c.answer
			var deltas []string
			env := runners.Env{}
			if streaming {
				env.Text = func(d string) { deltas = append(deltas, d) }
			}
			res, err := rn.Run(context.Background(), runners.Job{Input: in}, env)
			if err != nil {
				t.Fatalf("%s (streaming %v): %v", c.name, streaming, err)
			}
			if res.Document["content"] != "Hi there" || res.Document["finish_reason"] != "length" || res.Metrics["input_tokens"] != 4 || res.Metrics["output_tokens"] != 2 {
				t.Fatalf("%s (streaming %v): document %v metrics %v", c.name, streaming, res.Document, res.Metrics)
			}
			if streaming && strings.Join(deltas, "") != "Hi there" {
				t.Fatalf("%s: the text passed on as it came is %q", c.name, deltas)
			}
		}
	}

	// A usage below zero is no count: the reference tokenizer counts instead.
	answer = send("application/json", strings.Replace(whole, `"prompt_tokens":4,"completion_tokens":2`, `"prompt_tokens":-50,"completion_tokens":-50`, 1))
	if res, err := rn.Run(context.Background(), runners.Job{Input: in}, runners.Env{}); err != nil || res.Metrics["input_tokens"] != 7 || res.Metrics["output_tokens"] != 2 {
		t.Fatalf("negative usage: metrics %v, err %v", res.Metrics, err)
	}

	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"empty body", send("application/json", "")},
		{"empty body, no type", send("", "")},
		{"not JSON", send("application/json", "<html>oops</html>")},
		{"an HTML page", send("text/html", "<html>oops</html>")},
		{"no choices", send("application/json", `{"object":"chat.completion","choices":[]}`)},
		{"no message", send("application/json", `{"choices":[{"index":0,"finish_reason":"stop"}]}`)},
		{"an error object", send("application/json", `{"error":{"message":"model overloaded"}}`)},
		{"an empty stream", send("text/event-stream", "")},
		{"a stream cut short", send("text/event-stream", "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n")},
		{"an unreadable chunk", send("text/event-stream", "data: {nope\n\n")},
		{"an error event", send("text/event-stream", "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"error\":{\"message\":\"engine died\"}}\n\n")},
	} {
		for _, streaming := range []bool{false, true} {
			answer = c.answer
			env := runners.Env{}
			if streaming {
				env.Text = func(string) {}
			}
			res, err := rn.Run(context.Background(), runners.Job{Input: in}, env)
			var fail *runners.Failure
			if !errors.As(err, &fail) || fail.Code != "run_failed" {
				t.Fatalf("%s (streaming %v): err %v, document %v: want a failed run", c.name, streaming, err, res.Document)
			}
		}
	}
}

func TestEmbeddingsFromUpstream(t *testing.T) {
	srv := upstream(t)
	rn, _ := New(Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "e", Kind: catalog.KindEmbeddings})
	in, _ := json.Marshal(catalog.EmbeddingsInput{Input: []string{"a", "b", "c"}, InputTokens: 3})
	res, err := rn.Run(context.Background(), runners.Job{Input: in}, runners.Env{})
	if err != nil {
		t.Fatal(err)
	}
	vecs := res.Document["embeddings"].([]any)
	if len(vecs) != 3 || vecs[2].([]float64)[0] != 2 || res.Metrics["input_tokens"] != 5 {
		t.Fatalf("document %v metrics %v", res.Document, res.Metrics)
	}
}

// An embeddings answer must fill every input's index exactly once with a vector: one that
// leaves an index out, repeats one or sends an empty vector fails the run, never succeeds with
// a hole the caller would be charged for.
func TestEmbeddingsAnswerFillsEveryIndexOnce(t *testing.T) {
	for name, data := range map[string]string{
		"every index 0":  `{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}`,
		"one left out":   `{"index":1,"embedding":[1,0]},{"index":1,"embedding":[0,1]}`,
		"a null vector":  `{"index":0,"embedding":[1,0]},{"index":1,"embedding":null}`,
		"an empty one":   `{"index":0,"embedding":[]},{"index":1,"embedding":[0,1]}`,
		"out of range":   `{"index":0,"embedding":[1,0]},{"index":2,"embedding":[0,1]}`,
		"one vector too": `{"index":0,"embedding":[1,0]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"data":[%s],"usage":{"prompt_tokens":2}}`, data)
		}))
		rn, _ := New(Config{BaseURL: srv.URL + "/v1", Model: "e", Kind: catalog.KindEmbeddings})
		in, _ := json.Marshal(catalog.EmbeddingsInput{Input: []string{"a", "b"}, InputTokens: 2})
		res, err := rn.Run(context.Background(), runners.Job{Input: in}, runners.Env{})
		srv.Close()
		var f *runners.Failure
		if !errors.As(err, &f) || f.Retryable || strings.Contains(f.Message, "upstream") {
			t.Errorf("%s: err %v, document %v: want a run failure for a person", name, err, res.Document)
		}
	}
}

// A model server that is busy (429, 5xx) fails the run retryably, and the run's metrics say
// when a new call may succeed: the server's Retry-After (capped at a minute), or 1 s; the
// metric is the one chat.FailureError reads.
func TestBusyUpstreamNotesItsRetryAfter(t *testing.T) {
	if retryAfterMetric != chat.RetryAfterMetric {
		t.Fatalf("metric %q, chat reads %q", retryAfterMetric, chat.RetryAfterMetric)
	}
	for header, want := range map[string]float64{"7": 7, "": 1, "3600": 60, "soon": 1} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if header != "" {
				w.Header().Set("Retry-After", header)
			}
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		rn, _ := New(Config{BaseURL: srv.URL + "/v1", Model: "e", Kind: catalog.KindEmbeddings})
		in, _ := json.Marshal(catalog.EmbeddingsInput{Input: []string{"a"}, InputTokens: 1})
		res, err := rn.Run(context.Background(), runners.Job{Input: in}, runners.Env{})
		srv.Close()
		var f *runners.Failure
		if !errors.As(err, &f) || !f.Retryable || res.Metrics[retryAfterMetric] != want {
			t.Errorf("Retry-After %q: err %v metrics %v, want a retryable failure after %v s", header, err, res.Metrics, want)
		}
	}
}
