// Package queueapi is the queue host ({queue_url}): submit to a model address, read status
// (and stream it), read the result, cancel. It speaks the queue protocol fal clients expect,
// so an existing fal client pointed at this host works. routes.go lists the whole surface.
package queueapi
