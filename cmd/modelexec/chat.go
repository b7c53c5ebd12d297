package main

// ChatFlags configure where the language models run (internal/server wires them).
type ChatFlags struct {
	OpenAIUpstream  []string `name:"openai-upstream" sep:"none" help:"Run a language model on an OpenAI-compatible server (vLLM, llama.cpp server, Ollama): --openai-upstream qwen=http://gpu-1:8000/v1,key=sk-...,name=Qwen/Qwen2.5-7B-Instruct (repeatable; key and name optional)."`
	ReferenceModels bool     `name:"reference-models" help:"Run the built-in reference chat and embeddings models (CPU stand-ins, not the named models) for language models without an upstream; on under --dev. Off, such models answer chat_not_configured (503)."`
}
