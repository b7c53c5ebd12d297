// Package studio owns studio documents: the brief of a project and its canvases, each a Yjs
// document that windows edit at once and the service merges. It checks every update before
// anything touches a stored document (Validate), merges with a maintained Yjs port
// (github.com/skyterra/y-crdt, byte-compatible with the yjs npm package), enforces the
// 2,097,152-byte limit of spec 02, serializes merges per document (a lock in the process and a
// revision compare-and-swap in the store, so several processes over one PostgreSQL agree), and
// fans each persisted merge out to live peers (Hub) speaking the y-websocket protocol (Message).
//
// It must not import net/http, database/sql or any driver: transports live in
// internal/accountapi, storage in internal/store/sqlstore.
package studio
