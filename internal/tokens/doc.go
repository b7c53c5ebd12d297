// Package tokens is the service's reference tokenizer: it splits text into the pieces the
// built-in language models read and write, and counts them for quotes.
//
// It approximates a byte-pair tokenizer of the kind the catalogue's chat models use, without
// shipping a vocabulary: a word keeps its leading space and is cut into pieces of at most
// six letters, digits go in groups of three, every other symbol is its own piece, and a run
// of line breaks is one piece. Text outside ASCII counts one piece per character, which
// over-counts rather than under-counts. Quotes are an upper bound, so over-counting is the
// safe side: a settled charge never passes its quote.
//
// It must not import net/http, database/sql or any store.
package tokens
