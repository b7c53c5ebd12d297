package builtin

import (
	"context"

	"github.com/modelexec/modelexec/internal/runners"
)

// Noop is the name a catalogue entry gives ("runner": "noop") to be run by the no-op
// reference runner.
const Noop = "noop"

// noop answers at once with a small document and does no work: an operator sizes a
// deployment (and the benchmark measures the engine) without a model's cost in the figures.
type noop struct{}

// NewNoop returns the no-op reference runner.
func NewNoop() runners.Runner { return noop{} }

func (noop) Run(ctx context.Context, j runners.Job, env runners.Env) (runners.Result, error) {
	if err := ctx.Err(); err != nil {
		return runners.Result{}, err
	}
	return runners.Result{Document: map[string]any{"ok": true, "runner": Noop}, Done: 1}, nil
}
