package studio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// MaxBytes is the most a stored document may weigh, encoded as one Yjs update (spec 02
// Limits: "Brief state bytes 0 to 2097152").
const MaxBytes = 2097152

// Name names a document of a project: "brief", or "canvas:" followed by the canvas id. It is
// the `doc` of the acknowledgement.
type Name string

// Brief is the project's brief.
const Brief Name = "brief"

// Canvas names the canvas with id.
func Canvas(id string) Name { return Name("canvas:" + id) }

// maxID bounds project and canvas ids: they are path segments chosen by the caller.
const maxID = 128

// CheckID refuses a project or canvas id that is empty, longer than 128 bytes, or holds a
// control character, a slash or a colon. The message is written for the caller.
func CheckID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s id is empty", what)
	case len(id) > maxID:
		return fmt.Errorf("%s id is %d bytes; the most is %d", what, len(id), maxID)
	case strings.ContainsAny(id, "/:"):
		return fmt.Errorf("%s id may not hold '/' or ':'", what)
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return fmt.Errorf("%s id holds a control character", what)
	}
	return nil
}

// Key addresses one stored document. Projects are per account: the same project id under
// another account is another project.
type Key struct {
	Account string
	Project string
	Doc     Name
}

// Stored is a document as the store holds it: State is the whole document encoded as one Yjs
// update; Rev counts the writes that changed it (0: nothing stored).
type Stored struct {
	Rev       int64
	State     []byte
	UpdatedAt time.Time
}

// PutParams writes State as revision Prev+1 of Key, only if the stored revision is still Prev
// (0: only if nothing is stored).
type PutParams struct {
	Key   Key
	Prev  int64
	State []byte
	Now   time.Time
}

// Errors of the Store port.
var (
	// ErrNotFound: nothing is stored under the key (a document), or the account has no
	// document in the project (a project).
	ErrNotFound = errors.New("studio: not found")
	// ErrRevisionMoved: Put found a revision other than Prev.
	ErrRevisionMoved = errors.New("studio: stored revision moved")
)

// Store keeps documents. Implementations: MemStore, sqlstore.Studio; studiotest.RunStoreSuite
// holds them to one behaviour.
type Store interface {
	// Document returns the stored document, or ErrNotFound.
	Document(ctx context.Context, k Key) (Stored, error)
	// Revision returns the stored revision alone (0 when nothing is stored), so a process
	// whose decoded copy is current need not read the whole document again.
	Revision(ctx context.Context, k Key) (int64, error)
	// ProjectExists reports whether the account has at least one document in the project.
	ProjectExists(ctx context.Context, account, project string) (bool, error)
	// Put stores p.State as revision p.Prev+1, or returns ErrRevisionMoved.
	Put(ctx context.Context, p PutParams) error
	GenerationStore
}

// GenerationStore keeps a document's lineage beside its revision.
type GenerationStore interface {
	// Lineage returns the stored lineage (zero when nothing is stored or never saved whole).
	Lineage(ctx context.Context, k Key) (Lineage, error)
	// Replace is Put for a whole-document save: it also advances the generation and stores
	// p.Retired.
	Replace(ctx context.Context, p ReplaceParams) error
}

// Lineage is what whole-document saves left on a document: how many there were, and what they
// dropped (Retired, encoded; empty before the first save).
type Lineage struct {
	Generation int64
	Retired    []byte
}

// ReplaceParams is a whole-document save: PutParams, and what all saves so far dropped.
type ReplaceParams struct {
	PutParams
	Retired []byte
}

// StaleError refuses an update made in an older generation of the document than the stored
// one: a whole-document save replaced the copy it was made in. Nothing changed.
type StaleError struct {
	Doc     Name
	Current int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("the %s was replaced by a whole-document save (generation %d); load it into a new document and connect again", e.Doc, e.Current)
}
