package studio

import "time"

// EditLimits bound what one live connection may write: operations (structs and delete ranges
// of its updates) and bytes over a window, each refilled evenly across it. A typist sends one
// update of one or two operations per key; a paste is one operation of many bytes.
type EditLimits struct {
	Window time.Duration
	Ops    float64
	Bytes  float64
}

// DefaultEditLimits let an editor type or paste as fast as a person does with room to spare
// (60 operations a second sustained, 600 at once) while a runaway client is held to that.
var DefaultEditLimits = EditLimits{Window: 10 * time.Second, Ops: 600, Bytes: 2 * MaxBytes}

// EditBudget is what one connection has left: full at its start.
type EditBudget struct {
	Ops, Bytes float64
	At         time.Time
}

// NewEditBudget is the budget of a connection opened at now.
func NewEditBudget(l EditLimits, now time.Time) EditBudget {
	return EditBudget{Ops: l.Ops, Bytes: l.Bytes, At: now}
}

// AdmitEdit decides whether an update of bytes and ops may be merged at now, and answers the
// budget left. A refused edit spends nothing.
func AdmitEdit(l EditLimits, b EditBudget, now time.Time, bytes, ops int) (EditBudget, bool) {
	if elapsed := now.Sub(b.At); elapsed > 0 {
		share := float64(elapsed) / float64(l.Window)
		b.Ops = min(l.Ops, b.Ops+share*l.Ops)
		b.Bytes = min(l.Bytes, b.Bytes+share*l.Bytes)
		b.At = now
	}
	if float64(ops) > b.Ops || float64(bytes) > b.Bytes {
		return b, false
	}
	b.Ops -= float64(ops)
	b.Bytes -= float64(bytes)
	return b, true
}
