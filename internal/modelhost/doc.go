// Package modelhost is the two hosts that run a model. The queue host ({queue_url}): submit to
// a model address, read status (and stream it), read the result, cancel; it speaks the queue
// protocol fal clients expect, so an existing fal client pointed at this host works. The
// synchronous host ({sync_url}): the same request, but the connection is held and the answer
// is the model's output. routes.go lists the queue host, Sync.Routes the synchronous one; the
// request options, the model lookup and the admission of a model are shared.
package modelhost
