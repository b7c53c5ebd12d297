package server

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

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

// ParseUpstream reads one --openai-upstream: model=URL[,key=...][,name=...][,images][,tools]
// (name defaults to the model's slug; images: the upstream's model reads images; tools: it
// calls function tools).
func ParseUpstream(s string) (slug string, cfg openai.Config, err error) {
	slug, rest, ok := strings.Cut(s, "=")
	if !ok || slug == "" {
		return "", cfg, fmt.Errorf("--openai-upstream %q: want model=URL[,key=...][,name=...]", s)
	}
	parts := strings.Split(rest, ",")
	cfg = openai.Config{BaseURL: parts[0], Model: slug}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "key":
			cfg.APIKey = v
		case "name":
			cfg.Model = v
		case "images":
			cfg.Images = v == "" || v == "true"
		case "tools":
			cfg.Tools = v == "" || v == "true"
		default:
			return "", cfg, fmt.Errorf("--openai-upstream %s: unknown setting %q (key, name, images, tools)", slug, k)
		}
	}
	return slug, cfg, nil
}

// wireChat registers a metered runner for every language model that has one (the catalogue
// entry's runner, replaced by Config.OpenAIUpstream; a reference runner only with
// Config.ReferenceModels, DESIGN 36) into reg, and answers the chat service;
// its Jobs is set once the jobs engine exists.
func (s *Server) wireChat(cat *catalog.Catalog, reg runners.Registry, db *sqlstore.DB, now func() time.Time) (*chat.Service, error) {
	hub := chat.NewHub()
	langs := runners.Registry{}
	for _, m := range cat.LanguageModels("") {
		l := m.Language()
		switch l.Runner {
		case catalog.RunnerReference:
			if !s.cfg.ReferenceModels {
				continue // answers chat_not_configured unless an upstream is named below
			}
			if l.Kind == catalog.KindEmbeddings {
				langs[m.Slug] = builtin.EmbeddingsRunner{Dimensions: l.Dimensions}
			} else {
				langs[m.Slug] = builtin.ChatRunner{}
			}
		case catalog.RunnerOpenAI:
			rn, err := openai.New(openai.Config{BaseURL: l.Upstream.BaseURL, Model: l.Upstream.Model, Kind: l.Kind,
				APIKey: os.Getenv(l.Upstream.APIKeyEnv), Images: l.Upstream.Images, Tools: l.Upstream.Tools})
			if err != nil {
				return nil, fmt.Errorf("catalogue %s: %w", m.Slug, err)
			}
			langs[m.Slug] = rn
		}
	}
	for _, u := range s.cfg.OpenAIUpstream {
		slug, cfg, err := ParseUpstream(u)
		if err != nil {
			return nil, err
		}
		m, ok := cat.LanguageModel(slug)
		if !ok {
			return nil, fmt.Errorf("--openai-upstream %s: no such language model (%s)", slug, strings.Join(cat.LanguageSlugs(""), ", "))
		}
		cfg.Kind = m.Language().Kind
		rn, err := openai.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("--openai-upstream %s: %w", slug, err)
		}
		langs[slug] = rn
	}
	for slug, inner := range langs {
		m, _ := cat.LanguageModel(slug)
		langs[slug] = chat.Meter{Model: m, Inner: inner, Hub: hub}
		reg[slug] = langs[slug]
	}
	return &chat.Service{Catalog: cat, Runners: langs, Hub: hub, Store: sqlstore.Chat{DB: db}, Now: now}, nil
}

// mountChat serves the chat routes and /compat/v1 on the account API.
func mountChat(acct *accountapi.Handler, svc *chat.Service, gate *httpapi.Gate, now func() time.Time, log *slog.Logger) {
	acct.Chat = svc
	acct.Compat = (&compatapi.Handler{Gate: gate, Chat: svc, Now: now, Log: log}).Routes()
}
