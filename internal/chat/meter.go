package chat

import (
	"context"
	"fmt"
	"math"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/runners"
)

// Meter wraps the runner of one language model: it passes the runner's text to the Hub when a
// request streams it, and turns the usage the runner reports into the fraction of the quote the
// engine settles, so a call is charged for the tokens it used and never above its quote.
type Meter struct {
	Model *catalog.Model
	Inner runners.Runner
	Hub   *Hub
}

// Honours reports whether the inner runner honours setting (a chat input's response_format,
// say); a runner that does not say honours none.
func (m Meter) Honours(setting string) bool {
	h, ok := m.Inner.(interface{ Honours(string) bool })
	return ok && h.Honours(setting)
}

// Run runs the inner runner and settles Done from its usage: the fraction of the job's quote
// that the tokens used cost.
func (m Meter) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	l := m.Model.Language()
	if l == nil {
		return runners.Result{}, &runners.Failure{Code: "run_failed", Message: fmt.Sprintf("%s is not a language model", job.Slug)}
	}
	if m.Hub != nil {
		env.Text = m.Hub.Writer(job.ID)
	}
	res, err := m.Inner.Run(ctx, job, env)
	u := catalog.Usage{InputTokens: int(res.Metrics["input_tokens"]), OutputTokens: int(res.Metrics["output_tokens"])}
	cost := min(l.Cost(u), job.Quoted)
	res.Done = Fraction(cost, job.Quoted)
	if res.Document != nil {
		res.Document["credits"] = cost
	}
	return res, err
}

// Fraction is the Done that makes the engine's settlement (ceil(quote × done)) come to
// exactly cost credits. Zero cost of a non-zero quote answers the smallest positive
// fraction, because a completed run reporting 0 is read as the whole quote.
func Fraction(cost, quote int64) float64 {
	if quote <= 0 || cost >= quote {
		return 1
	}
	if cost <= 0 {
		return math.SmallestNonzeroFloat64
	}
	d := float64(cost) / float64(quote)
	for int64(math.Ceil(float64(quote)*d)) > cost {
		d = math.Nextafter(d, 0)
	}
	for int64(math.Ceil(float64(quote)*d)) < cost {
		d = math.Nextafter(d, 1)
	}
	return d
}
