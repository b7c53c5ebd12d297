package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/modelexec/modelexec/internal/plans"
)

// PlansCmd prints the built-in plan figures (rate buckets, in-flight limits, monthly
// allowances, seats, per-model concurrency): the starting point for an operator's own file,
// which `serve --plans FILE` loads instead.
type PlansCmd struct {
	Check string `help:"Check a plans file instead of printing the built-in figures: it must load as serve would load it." type:"existingfile"`
}

func (c *PlansCmd) Run(e *env) error {
	if c.Check != "" {
		p, err := loadPlans(c.Check)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: %d plans\n", c.Check, len(p.Rates))
		return nil
	}
	_, err := e.stdout.Write(plans.Default().JSON())
	return err
}

// loadPlans reads the plan figures serve runs: the built-in ones, or the operator's file.
func loadPlans(path string) (*plans.Plans, error) {
	if path == "" {
		return plans.Default(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plans: %w", err)
	}
	p, err := plans.Load(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("plans %s: %w", path, err)
	}
	return p, nil
}
