package builtin

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/runners"
)

func cosine(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestEmbedSimilarTextsScoreHigher(t *testing.T) {
	a := Embed("The cat sat on the mat", 256)
	b := Embed("A cat was sitting on a mat", 256)
	c := Embed("Quarterly revenue grew by four percent", 256)
	var n float64
	for _, x := range a {
		n += x * x
	}
	if math.Abs(n-1) > 1e-9 {
		t.Fatalf("|a| = %v, want 1", n)
	}
	if cosine(a, b) <= cosine(a, c) {
		t.Fatalf("similar %.3f <= unrelated %.3f", cosine(a, b), cosine(a, c))
	}
}

// TestCHAT04_EmbedShortenedKeepsLikeness: the first values of a reference vector carry every
// trigram, so a vector shortened to them is not all zeros and still ranks alike texts first.
func TestCHAT04_EmbedShortenedKeepsLikeness(t *testing.T) {
	short := func(s string, d int) []float64 {
		v := Embed(s, 256)[:d]
		var n float64
		for _, x := range v {
			n += x * x
		}
		if n == 0 {
			t.Fatalf("%q shortened to %d values is all zeros", s, d)
		}
		for i := range v {
			v[i] /= math.Sqrt(n)
		}
		return v
	}
	for _, d := range []int{1, 8, 16, 64} {
		short("hello world", d)
	}
	for _, d := range []int{16, 64} {
		a, b, c := short("The cat sat on the mat", d), short("A cat was sitting on a mat", d), short("Quarterly revenue grew by four percent", d)
		if cosine(a, b) <= cosine(a, c) {
			t.Fatalf("%d values: similar %.3f <= unrelated %.3f", d, cosine(a, b), cosine(a, c))
		}
	}
}

func TestChatRunnerStreamsAndCounts(t *testing.T) {
	in := catalog.ChatInput{Messages: []catalog.Message{{Role: "user", Content: "Tell me about deterministic answers"}}, MaxTokens: 1000, PromptTokens: 11}
	raw, _ := json.Marshal(in)
	var got []string
	res, err := ChatRunner{}.Run(context.Background(), runners.Job{Slug: "qwen", Input: raw}, runners.Env{Text: func(d string) { got = append(got, d) }})
	if err != nil {
		t.Fatal(err)
	}
	content := res.Document["content"].(string)
	if strings.Join(got, "") != content || int(res.Metrics["output_tokens"]) != len(got) {
		t.Fatalf("streamed %d pieces %q, document %q, counted %v", len(got), strings.Join(got, ""), content, res.Metrics["output_tokens"])
	}
	again, _ := ChatRunner{}.Run(context.Background(), runners.Job{Slug: "qwen", Input: raw}, runners.Env{})
	if again.Document["content"] != content {
		t.Fatal("the reference answer is not deterministic")
	}
	in.Stop = []string{" I am"}
	raw, _ = json.Marshal(in)
	cut, _ := ChatRunner{}.Run(context.Background(), runners.Job{Slug: "qwen", Input: raw}, runners.Env{})
	if c := cut.Document["content"].(string); !strings.HasPrefix(content, c) || strings.Contains(c, " I am") || c == "" {
		t.Fatalf("stop sequence: %q", c)
	}
	in.Stop = nil
	in.MaxTokens = 3
	raw, _ = json.Marshal(in)
	short, _ := ChatRunner{}.Run(context.Background(), runners.Job{Slug: "qwen", Input: raw}, runners.Env{})
	if short.Document["finish_reason"] != "length" || short.Metrics["output_tokens"] != 3 {
		t.Fatalf("max_tokens 3: %v %v", short.Document["finish_reason"], short.Metrics["output_tokens"])
	}
}
