package server

import (
	"strings"
	"testing"
)

// TestCHAT_ParseUpstream reads --openai-upstream: the URL, the key, the upstream's model name
// (the slug by default), and whether the model reads images and calls tools.
func TestCHAT_ParseUpstream(t *testing.T) {
	for _, c := range []struct {
		in                  string
		slug, url, key, mdl string
		images, tools       bool
		err                 string
	}{
		{in: "qwen=http://gpu:8000/v1", slug: "qwen", url: "http://gpu:8000/v1", mdl: "qwen"},
		{in: "kimi=http://gpu/v1,key=sk-1,name=Kimi-K2,images,tools", slug: "kimi", url: "http://gpu/v1", key: "sk-1", mdl: "Kimi-K2", images: true, tools: true},
		{in: "kimi=http://gpu/v1,images=false,tools=true", slug: "kimi", url: "http://gpu/v1", mdl: "kimi", tools: true},
		{in: "kimi=http://gpu/v1,vision", err: "unknown setting"},
		{in: "=http://gpu/v1", err: "want model=URL"},
	} {
		slug, cfg, err := ParseUpstream(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("%s: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || slug != c.slug || cfg.BaseURL != c.url || cfg.APIKey != c.key || cfg.Model != c.mdl || cfg.Images != c.images || cfg.Tools != c.tools {
			t.Fatalf("%s: %s %+v %v", c.in, slug, cfg, err)
		}
	}
}
