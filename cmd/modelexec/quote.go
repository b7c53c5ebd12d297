package main

import (
	"fmt"
	"strings"
)

// QuoteCmd prints a model's price before anything is submitted. The service publishes each
// model's price rule but has no read that prices one request without submitting it, so this
// prints the rule (and computes nothing itself: a second copy of the pricing would drift from
// the one that charges); a submit answers the exact price as credits_quoted.
type QuoteCmd struct {
	SDKFlags
	Model string   `arg:"" help:"Model: svc-serverless/<slug> or the slug."`
	Input []string `short:"i" help:"Input field as key=value (repeatable), checked for form; the rule below says which fields set the price."`
}

func (c *QuoteCmd) Run(e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	if _, err := parseInputs(c.Input); err != nil {
		return err
	}
	m, err := cl.Quote(e.ctx, c.Model)
	if err != nil {
		return err
	}
	r := m.Price.Rule
	fmt.Fprintf(e.stdout, "%s: priced per %s, counted as %s\n", m.ID, r.Unit, r.Counting)
	for _, b := range r.Bands {
		var parts []string
		if b.When != nil {
			parts = append(parts, "when "+*b.When)
		}
		if b.MinUnits != nil || b.MaxUnits != nil {
			lo, hi := "0", "no limit"
			if b.MinUnits != nil {
				lo = b.MinUnits.String()
			}
			if b.MaxUnits != nil {
				hi = b.MaxUnits.String()
			}
			parts = append(parts, fmt.Sprintf("%s to %s %s", lo, hi, r.Unit))
		}
		line := fmt.Sprintf("  %s credits per %s", b.CreditsPerUnit, r.Unit)
		if len(parts) > 0 {
			line += " (" + strings.Join(parts, ", ") + ")"
		}
		fmt.Fprintln(e.stdout, line)
	}
	if m.Price.Metered {
		fmt.Fprintln(e.stdout, "Metered: the charge settles to what the job used, never above the quote.")
	}
	fmt.Fprintln(e.stdout, "Credits are whole numbers; the exact price of a request is quoted at submit (credits_quoted) and is the most it can cost.")
	return nil
}
