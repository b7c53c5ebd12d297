package main

import (
	"fmt"
	"strings"

	"github.com/modelexec/modelexec/internal/server"
)

// ChatFlags configure where the language models run (internal/server wires them).
type ChatFlags struct {
	OpenAIUpstream  []string `name:"openai-upstream" sep:"none" envsep:";" help:"Run a language model on an OpenAI-compatible server (vLLM, llama.cpp server, Ollama): --openai-upstream qwen=http://gpu-1:8000/v1,key=sk-...,name=Qwen/Qwen2.5-7B-Instruct (repeatable; key and name optional; in MODELEXEC_OPENAI_UPSTREAM, several separated by ;)."`
	ReferenceModels bool     `name:"reference-models" help:"Run the built-in reference chat and embeddings models (CPU stand-ins, not the named models) for language models without an upstream; on under --dev. Off, such models answer chat_not_configured (503)."`
}

// checkUpstreams refuses an --openai-upstream whose base URL the chat paths cannot be appended
// to (server.CheckBaseURL), or one holding a ; (two upstreams joined by another separator than
// the environment's).
func (f ChatFlags) checkUpstreams() error {
	for _, v := range f.OpenAIUpstream {
		slug, cfg, err := server.ParseUpstream(v)
		if err != nil {
			return err
		}
		err = server.CheckBaseURL(cfg.BaseURL)
		if strings.Contains(cfg.BaseURL, ";") {
			err = fmt.Errorf("contains a ; (several upstreams in MODELEXEC_OPENAI_UPSTREAM are separated by ;)")
		}
		if err != nil {
			return fmt.Errorf("--openai-upstream %s: base URL %q %w", slug, cfg.BaseURL, err)
		}
	}
	return nil
}
