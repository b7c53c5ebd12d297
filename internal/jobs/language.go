package jobs

import "github.com/modelexec/modelexec/internal/catalog"

// OfLanguageModel reports whether j is a language model's job: a chat turn, a /compat/v1 call,
// embeddings (the products of language-model jobs). Such a model has no address on the queue
// host, and its job's answer goes only to the request that waits for it, in its process.
func (j Job) OfLanguageModel() bool {
	return j.Product == catalog.ProductChat || j.Product == catalog.ProductEmbeddings
}
