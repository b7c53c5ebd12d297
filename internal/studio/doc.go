// Package studio owns studio documents: the brief of a project and its canvases, each a Yjs
// document that windows edit at once and the service merges. It checks every update before
// anything touches a stored document (Validate), merges with a maintained Yjs port
// (github.com/skyterra/y-crdt, byte-compatible with the yjs npm package), enforces the
// 2,097,152-byte limit of spec 02, serializes merges per document (a lock in the process and a
// revision compare-and-swap in the store, so several processes over one PostgreSQL agree), and
// fans each persisted merge out to live peers (Join, Session) speaking the y-websocket
// protocol. It keeps each document's lineage (a generation per whole-document save and the
// clock ranges saves dropped), so a live copy of an older generation is refused (StaleError);
// decides a live connection's edit budget (AdmitEdit); and signs the single-use tickets browsers
// open the live route with (Tickets; TicketClaimer makes them single-use across processes).
//
// It must not import net/http, database/sql or any driver: transports live in
// internal/accountapi, storage in internal/store/sqlstore.
package studio
