package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/compatapi"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/runners/builtin"
	"github.com/modelexec/modelexec/internal/runners/openai"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// ChatFlags configure the language models.
type ChatFlags struct {
	OpenAIUpstream []string `name:"openai-upstream" sep:"none" help:"Run a language model on an OpenAI-compatible server (vLLM, llama.cpp server, Ollama): --openai-upstream qwen=http://gpu-1:8000/v1,key=sk-...,name=Qwen/Qwen2.5-7B-Instruct (repeatable; key and name optional)."`
}

// upstreamFlag is one parsed --openai-upstream.
type upstreamFlag struct {
	slug string
	cfg  openai.Config
}

func parseUpstream(s string) (upstreamFlag, error) {
	slug, rest, ok := strings.Cut(s, "=")
	if !ok || slug == "" {
		return upstreamFlag{}, fmt.Errorf("--openai-upstream %q: want model=URL[,key=...][,name=...]", s)
	}
	parts := strings.Split(rest, ",")
	f := upstreamFlag{slug: slug, cfg: openai.Config{BaseURL: parts[0], Model: slug}}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "key":
			f.cfg.APIKey = v
		case "name":
			f.cfg.Model = v
		default:
			return upstreamFlag{}, fmt.Errorf("--openai-upstream %s: unknown setting %q (key, name)", slug, k)
		}
	}
	return f, nil
}

// wireChat registers a metered runner for every language model that has one (the catalogue's
// runner, replaced by --openai-upstream) into reg, and answers the chat service; its Jobs is
// set once the jobs engine exists.
func (c *ChatFlags) wireChat(reg runners.Registry, cat *catalog.Catalog, db *sqlstore.DB) (*chat.Service, error) {
	hub := chat.NewHub()
	langs := runners.Registry{}
	for _, m := range cat.LanguageModels("") {
		l := m.Language()
		var inner runners.Runner
		switch l.Runner {
		case catalog.RunnerReference:
			if l.Kind == catalog.KindEmbeddings {
				inner = builtin.EmbeddingsRunner{Dimensions: l.Dimensions}
			} else {
				inner = builtin.ChatRunner{}
			}
		case catalog.RunnerOpenAI:
			rn, err := openai.New(openai.Config{BaseURL: l.Upstream.BaseURL, Model: l.Upstream.Model, Kind: l.Kind, APIKey: os.Getenv(l.Upstream.APIKeyEnv)})
			if err != nil {
				return nil, fmt.Errorf("catalogue %s: %w", m.Slug, err)
			}
			inner = rn
		}
		if inner != nil {
			langs[m.Slug] = inner
		}
	}
	for _, s := range c.OpenAIUpstream {
		f, err := parseUpstream(s)
		if err != nil {
			return nil, err
		}
		m, ok := cat.LanguageModel(f.slug)
		if !ok {
			return nil, fmt.Errorf("--openai-upstream %s: no such language model (%s)", f.slug, strings.Join(cat.LanguageSlugs(""), ", "))
		}
		f.cfg.Kind = m.Language().Kind
		rn, err := openai.New(f.cfg)
		if err != nil {
			return nil, fmt.Errorf("--openai-upstream %s: %w", f.slug, err)
		}
		langs[f.slug] = rn
	}
	for slug, inner := range langs {
		m, _ := cat.LanguageModel(slug)
		langs[slug] = chat.Meter{Model: m, Inner: inner, Hub: hub}
		reg[slug] = langs[slug]
	}
	return &chat.Service{Catalog: cat, Runners: langs, Hub: hub, Store: sqlstore.Chat{DB: db}, Now: utcNow}, nil
}

// mountChat serves the chat routes and /compat/v1 on the account API.
func mountChat(acct *accountapi.Handler, svc *chat.Service, gate *httpapi.Gate, log *slog.Logger) {
	acct.Chat = svc
	acct.Compat = (&compatapi.Handler{Gate: gate, Chat: svc, Now: utcNow, Log: log}).Routes()
}
