package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/tokens"
)

// The reference language models. They are not the catalogue's named models (qwen, kimi):
// they stand in for them when no OpenAI-compatible upstream is configured, so the whole
// chat path (quote, stream, settle to the tokens used) runs on a laptop. The chat model
// answers deterministically from the conversation; the embeddings model gives real,
// normalised vectors of hashed character trigrams, so texts that share wording score higher
// than unrelated ones under cosine similarity.

// RefuseMarker in the last user message makes the reference chat model refuse the request as
// written (content_policy), the way a real model's filter would; tests use it.
const RefuseMarker = "[refuse]"

// ChatRunner is the reference chat model.
type ChatRunner struct{}

// Run writes a deterministic answer token by token through env.Text, cut before the first
// stop sequence, stopping at max_tokens (finish_reason "length") and counting every token it
// reads and writes. Temperature does not change a reference answer.
func (ChatRunner) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	var in catalog.ChatInput
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return runners.Result{}, runners.Internal("Reading the chat input", err)
	}
	last := ""
	for i := len(in.Messages) - 1; i >= 0; i-- {
		if in.Messages[i].Role == "user" {
			last = in.Messages[i].Content
			break
		}
	}
	if strings.Contains(last, RefuseMarker) {
		return runners.Result{}, &runners.Refusal{Code: "content_policy", Detail: []runners.Violation{{Loc: []string{"body", "messages"},
			Msg: "The model declined to answer this message.", Type: "content_policy"}}}
	}
	answer := referenceAnswer(job.Slug, in, last)
	for _, stop := range in.Stop {
		if i := strings.Index(answer, stop); stop != "" && i >= 0 {
			answer = answer[:i] // the stop sequence is not part of the answer
		}
	}
	pieces := tokens.Split(answer)
	finish := "stop"
	if len(pieces) > in.MaxTokens {
		pieces, finish = pieces[:in.MaxTokens], "length"
	}
	var b strings.Builder
	written := 0
	for _, p := range pieces {
		if err := ctx.Err(); err != nil {
			return languageResult(b.String(), "cancelled", in.PromptTokens, written, in.MaxTokens), err
		}
		b.WriteString(p)
		written++
		if env.Text != nil {
			env.Text(p)
		}
	}
	return languageResult(b.String(), finish, in.PromptTokens, written, in.MaxTokens), nil
}

// languageResult is a chat run's document. Done is left to the meter, which knows prices.
func languageResult(content, finish string, in, out, budget int) runners.Result {
	return runners.Result{
		Document: map[string]any{"content": content, "finish_reason": finish,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out}},
		Metrics: map[string]float64{"input_tokens": float64(in), "output_tokens": float64(out), "output_budget": float64(budget)},
	}
}

// referenceAnswer composes the reply: what was asked, how long it was, and a few words of
// it back, longer at a deeper effort. The same conversation always gets the same answer.
func referenceAnswer(slug string, in catalog.ChatInput, last string) string {
	words := strings.FieldsFunc(last, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	longest := ""
	for _, w := range words {
		if len([]rune(w)) > len([]rune(longest)) {
			longest = w
		}
	}
	h := fnv.New32a()
	for _, m := range in.Messages {
		h.Write([]byte(m.Role + "\x00" + m.Content + "\x00"))
	}
	openers := []string{"Here is my answer.", "Thanks for the message.", "Good question.", "Let me think about that."}
	var b strings.Builder
	fmt.Fprintf(&b, "%s I am the %s reference model, so this reply is composed rather than reasoned. ", openers[h.Sum32()%uint32(len(openers))], slug)
	fmt.Fprintf(&b, "Your message has %d words", len(words))
	if longest != "" {
		fmt.Fprintf(&b, " and the longest is %q", longest)
	}
	b.WriteString(".")
	echo := 12
	switch in.Effort {
	case "light":
		echo = 4
	case "deep":
		echo = 48
	}
	if len(words) > 0 {
		b.WriteString(" You wrote: ")
		b.WriteString(strings.Join(words[:min(echo, len(words))], " "))
		b.WriteString(".")
	}
	if n := len(in.Messages); n > 1 {
		fmt.Fprintf(&b, " This conversation has %d messages so far.", n)
	}
	return b.String()
}

// EmbeddingsRunner is the reference embeddings model.
type EmbeddingsRunner struct {
	Dimensions int
}

// Run embeds every input string.
func (e EmbeddingsRunner) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	var in catalog.EmbeddingsInput
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return runners.Result{}, runners.Internal("Reading the embeddings input", err)
	}
	vecs := make([]any, len(in.Input))
	for i, s := range in.Input {
		if err := ctx.Err(); err != nil {
			return runners.Result{}, err
		}
		vecs[i] = Embed(s, e.Dimensions)
	}
	return runners.Result{
		Document: map[string]any{"embeddings": vecs, "usage": map[string]any{"input_tokens": in.InputTokens, "output_tokens": 0}},
		Metrics:  map[string]float64{"input_tokens": float64(in.InputTokens), "output_tokens": 0},
	}, nil
}

// Embed is the reference embedding: character trigrams of the lower-cased, space-padded
// words, each hashed to a sign and to a dimension (the hashing trick), then scaled to unit
// length. Texts sharing trigrams point the same way. Each trigram is hashed into the leading
// dims, dims/2, dims/4, ... 1 values too, so that the first values of a vector carry every
// trigram as the whole does: a vector shortened to its first values (the protocol's
// `dimensions`) keeps the likeness, and is all zeros only where its trigrams' signs cancel
// at every width.
func Embed(s string, dims int) []float64 {
	v := make([]float64, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune(" " + w + " ")
		for i := 0; i+3 <= len(r); i++ {
			h := fnv.New64a()
			h.Write([]byte(string(r[i : i+3])))
			x := h.Sum64()
			sign := 1.0
			if x>>63 == 1 {
				sign = -1
			}
			for width := uint64(dims); width >= 1; width /= 2 {
				v[int(x%width)] += sign
			}
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	if norm == 0 {
		v[0] = 1 // a text with no words still gets a unit vector
		return v
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}
