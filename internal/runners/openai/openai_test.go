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
			if req["model"] != "Qwen/Qwen2.5-7B" || req["stream"] != true {
				t.Errorf("request %v", req)
			}
			msgs := req["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)["content"].(string)
			if strings.Contains(last, "bad") {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":{"message":"could not parse","code":"invalid_request"}}`)
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
