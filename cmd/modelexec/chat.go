package main

// ChatFlags configure where the language models run (internal/server wires them).
type ChatFlags struct {
	OpenAIUpstream []string `name:"openai-upstream" sep:"none" help:"Run a language model on an OpenAI-compatible server (vLLM, llama.cpp server, Ollama): --openai-upstream qwen=http://gpu-1:8000/v1,key=sk-...,name=Qwen/Qwen2.5-7B-Instruct (repeatable; key and name optional)."`
}
