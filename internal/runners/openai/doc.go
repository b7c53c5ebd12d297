// Package openai runs language models on an OpenAI-compatible upstream: any server speaking
// the chat completions and embeddings protocol (vLLM, llama.cpp server, Ollama and similar),
// configured per model with a base URL, a key and the upstream's own model name.
//
// It owns the upstream protocol only; prices, quotes and settlement are the catalogue's and
// the jobs engine's. It must not import database/sql or any store.
package openai
