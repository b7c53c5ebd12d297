// Package chat owns language-model calls as the service sells them: a chat turn or an
// embeddings call is a job of the jobs engine (quoted from the prompt and the output budget,
// charged, settled to the tokens used, never above the quote, replayed on the same key), and
// conversations are threads of turns kept for the account.
//
// Meter wraps a language model's runner so the engine settles to the tokens used; Hub carries
// a running turn's text to the request that streams it (turns start in the process that took
// the request, because language models refuse a queue); Service runs calls and turns for the
// transports (/v1/chat, /v1/embeddings, /compat/v1).
//
// It must not import net/http, database/sql or any store: conversations are kept behind the
// Store interface.
package chat
