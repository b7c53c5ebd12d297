package catalog

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

func langModel(t *testing.T, slug string) *Model {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := c.LanguageModel(slug)
	if !ok {
		t.Fatalf("no language model %q", slug)
	}
	if _, ok := c.Model(slug); ok {
		t.Fatalf("language model %q has a queue-host address", slug)
	}
	return m
}

// CHAT-07: the chat models the spec names are catalogue entries priced per token (DESIGN 32).
func TestCHAT07LanguageModelsCatalogued(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LanguageSlugs(KindChat); len(got) != 2 || got[0] != "qwen" || got[1] != "kimi" {
		t.Fatalf("chat models = %v, want [qwen kimi]", got)
	}
	if got := c.LanguageSlugs(KindEmbeddings); len(got) != 1 {
		t.Fatalf("embeddings models = %v, want one", got)
	}
	if len(c.Models()) != 9 {
		t.Fatalf("queue-host models = %d, want the nine", len(c.Models()))
	}
}

func TestLanguageQuoteIsTheMostATurnCosts(t *testing.T) {
	m := langModel(t, "qwen") // 2 per 1,000 input, 6 per 1,000 output
	in, _, err := m.Validate([]byte(`{"messages":[{"role":"user","content":"Hello world"}],"max_tokens":1000}`), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := m.Quote(in)
	if err != nil {
		t.Fatal(err)
	}
	// prompt: 2 (priming) + 4 (framing) + 2 ("Hello", " world") = 8 tokens → 0.016; output 1000 → 6.
	if q.Credits != 7 {
		t.Fatalf("quote = %d, want ceil(6.016) = 7", q.Credits)
	}
	if c := m.Language().Cost(Usage{InputTokens: 8, OutputTokens: 10}); c != 1 {
		t.Fatalf("cost of 8 in + 10 out = %d, want 1", c)
	}
	// No max_tokens: the budget is the output limit.
	in, _, err = m.Validate([]byte(`{"messages":[{"role":"user","content":"Hi"}]}`), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	q, _ = m.Quote(in)
	if want := m.Language().Cost(Usage{InputTokens: 7, OutputTokens: 8192}); q.Credits != want {
		t.Fatalf("quote without max_tokens = %d, want %d", q.Credits, want)
	}
}

func TestLanguageRefusals(t *testing.T) {
	chat, emb := langModel(t, "qwen"), langModel(t, "embed-small")
	long := make([]byte, 0, 9000*2)
	for i := 0; i < 9000; i++ {
		long = append(long, "é"...)
	}
	cases := []struct {
		m    *Model
		body string
		code apierr.Code
	}{
		{chat, `{"messages":[]}`, apierr.InvalidBody},
		{chat, `{"messages":[{"role":"robot","content":"x"}]}`, apierr.InvalidBody},
		{chat, `{"messages":[{"role":"user","content":"x"}],"effort":"max"}`, apierr.UnknownEffort},
		{chat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":9000}`, apierr.OutputLimitReached},
		{emb, `{"input":[]}`, apierr.InputRequired},
		{emb, `{"input":["a", 3]}`, apierr.InputInvalid},
		{emb, `{"input":["` + string(long) + `"]}`, apierr.InputTooLong},
	}
	for _, c := range cases {
		_, _, err := c.m.Validate([]byte(c.body), time.Now(), nil)
		if !apierr.Is(err, c.code) {
			t.Errorf("%s %s: err = %v, want %s", c.m.Slug, c.body[:min(len(c.body), 60)], err, c.code)
		}
	}
	if _, _, err := emb.Validate([]byte(`{"input":["a"]}`), time.Now(), nil); err != nil {
		t.Fatalf("one input refused: %v", err)
	}
}

// FuzzLanguageValidate: any body either validates to an input whose quote is the whole
// budget, or is refused with a catalogued error; never a panic, never an uncatalogued error.
func FuzzLanguageValidate(f *testing.F) {
	c, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	chat, _ := c.LanguageModel("qwen")
	emb, _ := c.LanguageModel("embed-small")
	for _, s := range []string{`{"messages":[{"role":"user","content":"hi"}]}`, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"effort":"deep"}`,
		`{"input":["a","b"]}`, `{"input":[1]}`, `[]`, `{`, `{"messages":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, m := range []*Model{chat, emb} {
			in, _, err := m.Validate(raw, time.Now(), nil)
			if err != nil {
				if _, ok := apierr.As(err); !ok {
					t.Fatalf("%s: uncatalogued refusal %v", m.Slug, err)
				}
				continue
			}
			q, err := m.Quote(in)
			if err != nil || q.Credits < 0 {
				t.Fatalf("%s: a validated input does not quote: %v %d", m.Slug, err, q.Credits)
			}
		}
	})
}

// TestI30_CatalogueFiguresBounded: every catalogue figure that feeds arithmetic (a duration of
// seconds, a quote's price and units, a language quote's tokens, an embeddings vector's length)
// is refused outside its range, naming the model, the field and the range; a quote past the
// largest int64 saturates instead of wrapping. Proves issue 30 item 1.
func TestI30_CatalogueFiguresBounded(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*File)
		want string
	}{
		"stall ceiling": {func(f *File) { f.Models[1].Lifecycle.StallCeilingSeconds = 1 << 40 },
			`model "image-4b": lifecycle.stall_ceiling_seconds: 1099511627776 is out of range 1 to 31622400`},
		"seat wait": {func(f *File) { f.Models[1].Lifecycle.MaxWaitSeconds = -1 },
			`model "image-4b": lifecycle.max_wait_seconds: -1 is out of range 0 to 31622400`},
		"price": {func(f *File) { f.Models[1].Price.Bands[0].CreditsPerUnit = "1e30" },
			`model "image-4b": price.bands[0].credits_per_unit: 1e30 is out of range 0 to 1000000`},
		"min units": {func(f *File) { f.Models[1].Price.Bands[0].MinUnits = "1000000.5" },
			`model "image-4b": price.bands[0].min_units: 1000000.5 is out of range 0 to 1000000`},
		"token price": {func(f *File) { f.LanguageModels[0].OutputPer1000 = "2000000" },
			`language model "qwen": credits_per_1000_output_tokens: 2000000 is out of range 0 to 1000000`},
		"context window": {func(f *File) { f.LanguageModels[0].ContextWindow = 1 << 40 },
			`language model "qwen": context_window: 1099511627776 is out of range 1 to 100000000`},
		"output limit": {func(f *File) { f.LanguageModels[1].OutputLimit = 0 },
			`language model "kimi": output_limit: 0 is out of range 1 to 100000000`},
		"language stall": {func(f *File) { f.LanguageModels[1].StallCeilingSeconds = 1 << 40 },
			`language model "kimi": stall_ceiling_seconds: 1099511627776 is out of range 1 to 31622400`},
		"dimensions": {func(f *File) { f.LanguageModels[2].Dimensions = 1 << 40 },
			`language model "embed-small": dimensions: 1099511627776 is out of range 1 to 65536`},
	} {
		t.Run(name, func(t *testing.T) {
			var f File
			if err := json.Unmarshal(DefaultData(), &f); err != nil {
				t.Fatal(err)
			}
			if f.Models[1].Slug != "image-4b" || f.LanguageModels[0].Slug != "qwen" || f.LanguageModels[1].Slug != "kimi" || f.LanguageModels[2].Slug != "embed-small" {
				t.Fatal("fixture: the built-in catalogue's order changed")
			}
			c.edit(&f)
			if _, err := New(f); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
	if got := CeilCredits(new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(1), 70), big.NewInt(3))); got != math.MaxInt64 {
		t.Fatalf("ceil(2^70/3) = %d, want it saturated at %d", got, int64(math.MaxInt64))
	}
}
