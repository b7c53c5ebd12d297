// Package jsonscan walks the top-level members of a JSON object without decoding them.
//
// encoding/json builds a value for every member it reads (a map entry, an interface, a string),
// and its streaming Decoder allocates an error value at the end of every value; a 1 MiB body of
// ~131,000 short keys costs tens of megabytes either way. Refusals of such bodies only need to
// look at the keys, so this package walks them in place: no allocation per member beyond what
// the caller keeps. It imports nothing of the service and is imported by the core (catalog) and
// the transport (httpapi) alike.
package jsonscan
