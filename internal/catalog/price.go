package catalog

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// NotPricedError is a request no price band covers (above max_units, outside every band's
// when, or an input the model has no price for): 422 band_not_priced, before any charge.
type NotPricedError struct {
	Message string
}

func (e *NotPricedError) Error() string { return "band_not_priced: " + e.Message }

// Unit scales: the counting expression's product is divided by the unit's scale.
var unitScale = map[string]int64{"megapixel": 1_000_000, "second": 1, "call": 1}

// counting is a parsed counting expression such as width*height*steps+ultralytics.steps@28:
// a product of factors, each factor a sum of input paths ('+' binds tighter than '*', the
// published reading: width × height × (steps + ultralytics.steps)), divided by N (the @N).
// The expression "call" counts one unit per request.
type counting struct {
	perCall bool
	factors [][][]string // factor → addends → path
	n       int64
}

func parseCounting(expr string) (counting, error) {
	body, nStr, ok := strings.Cut(expr, "@")
	n := int64(1)
	if ok {
		v, err := strconv.ParseInt(nStr, 10, 64)
		if err != nil || v <= 0 {
			return counting{}, fmt.Errorf("counting expression %q: bad @N", expr)
		}
		n = v
	}
	if body == "call" {
		return counting{perCall: true, n: n}, nil
	}
	var c counting
	c.n = n
	for _, f := range strings.Split(body, "*") {
		var addends [][]string
		for _, a := range strings.Split(f, "+") {
			a = strings.TrimSpace(a)
			if a == "" {
				return counting{}, fmt.Errorf("counting expression %q: empty term", expr)
			}
			addends = append(addends, strings.Split(a, "."))
		}
		c.factors = append(c.factors, addends)
	}
	return c, nil
}

// count evaluates the product of the expression on a filled input. An addend absent from a
// sum counts 0 (ultralytics.steps when ultralytics is not sent); an absent sole factor is an
// error.
func (c counting) count(tree map[string]any) (*big.Rat, error) {
	if c.perCall {
		return big.NewRat(1, 1), nil
	}
	prod := big.NewRat(1, 1)
	for _, f := range c.factors {
		sum, found := new(big.Rat), false
		for _, p := range f {
			if v, ok := ratAt(tree, p...); ok {
				sum.Add(sum, v)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s is not in the input", joinDot(f[0]))
		}
		prod.Mul(prod, sum)
	}
	return prod, nil
}

// condition is a band's when: comparisons of input paths with numbers joined by &&.
type condition struct {
	terms []cmpTerm
}

type cmpTerm struct {
	path []string
	op   string
	val  *big.Rat
}

func parseWhen(s string) (*condition, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var c condition
	for _, t := range strings.Split(s, "&&") {
		t = strings.TrimSpace(t)
		var op string
		for _, o := range []string{"<=", ">=", "==", "!=", "<", ">"} {
			if strings.Contains(t, o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, fmt.Errorf("when %q: no comparison in %q", s, t)
		}
		l, r, _ := strings.Cut(t, op)
		v, ok := new(big.Rat).SetString(strings.TrimSpace(r))
		if !ok {
			return nil, fmt.Errorf("when %q: %q is not a number", s, r)
		}
		c.terms = append(c.terms, cmpTerm{strings.Split(strings.TrimSpace(l), "."), op, v})
	}
	return &c, nil
}

func (c *condition) holds(tree map[string]any) bool {
	if c == nil {
		return true
	}
	for _, t := range c.terms {
		v, ok := ratAt(tree, t.path...)
		if !ok {
			return false
		}
		k := v.Cmp(t.val)
		var pass bool
		switch t.op {
		case "<=":
			pass = k <= 0
		case ">=":
			pass = k >= 0
		case "<":
			pass = k < 0
		case ">":
			pass = k > 0
		case "==":
			pass = k == 0
		case "!=":
			pass = k != 0
		}
		if !pass {
			return false
		}
	}
	return true
}

// Quote is the price of one validated input: the most the request can cost.
type Quote struct {
	Credits     int64    // ceil(billed units × credits_per_unit)
	Units       *big.Rat // exact units the request counts
	BilledUnits *big.Rat // Units, raised to the band's min_units
	Unit        string   // megapixel, second, call
	Band        int      // index of the band that priced it
	// Exact is billed units × credits_per_unit unrounded, which a cancelled job is charged its
	// share of (ledger.Settle); nil on a language model's quote, whose runner meters the tokens
	// and settles on Credits.
	Exact *big.Rat
}

// UnitsDisplay is Units rounded up to 4 decimals, the form the price tables publish.
func (q Quote) UnitsDisplay() string { return ceilDecimal(q.Units, 4) }

// Quote prices a validated input (exact integer arithmetic, DESIGN 30). It returns
// *NotPricedError when no band covers the request.
func (m *Model) Quote(in Input) (Quote, error) {
	if m.lang != nil {
		return m.quoteLanguage(in)
	}
	tree := in.tree
	if tree == nil {
		v, err := decode(in.JSON)
		if err != nil {
			return Quote{}, fmt.Errorf("catalog: quote: %w", err)
		}
		t, ok := v.(map[string]any)
		if !ok {
			return Quote{}, fmt.Errorf("catalog: quote: input is not an object")
		}
		tree = t
	}
	p := m.price
	if p.contractUnpriced != nil {
		if msg := p.contractUnpriced(tree); msg != "" {
			return Quote{}, &NotPricedError{Message: msg}
		}
	}
	counted, err := p.counting.count(tree)
	if err != nil {
		return Quote{}, &NotPricedError{Message: err.Error()}
	}
	units := new(big.Rat).Quo(counted, big.NewRat(p.counting.n*unitScale[p.Unit], 1))
	for i, b := range p.bands {
		if !b.when.holds(tree) {
			continue
		}
		if b.max != nil && units.Cmp(b.max) > 0 {
			return Quote{}, &NotPricedError{Message: fmt.Sprintf("%s %s units is above the priced maximum of %s", ceilDecimal(units, 4), p.Unit, ceilDecimal(b.max, 4))}
		}
		billed := new(big.Rat).Set(units)
		if b.min != nil && billed.Cmp(b.min) < 0 {
			billed.Set(b.min)
		}
		cost := new(big.Rat).Mul(billed, b.perUnit)
		return Quote{Credits: CeilCredits(cost), Exact: cost, Units: units, BilledUnits: billed, Unit: p.Unit, Band: i}, nil
	}
	var whens []string
	for _, b := range p.bands {
		whens = append(whens, b.When)
	}
	return Quote{}, &NotPricedError{Message: "no price band covers this request (priced when " + strings.Join(whens, " or ") + ")"}
}

// CeilCredits is r rounded up to whole credits, saturated at the largest int64 rather than
// wrapped (the figures' ranges keep quotes far below it): the one rounding of a price, a
// quote's and a settlement's of part of its work alike (DESIGN 30).
func CeilCredits(r *big.Rat) int64 {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// ceilDecimal writes r rounded up to d decimals.
func ceilDecimal(r *big.Rat, d int) string {
	if r == nil {
		return ""
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(scale))
	c := big.NewRat(CeilCredits(scaled), 1)
	return c.Quo(c, new(big.Rat).SetInt(scale)).FloatString(d)
}

// trimDecimal drops trailing zeros of a decimal string ("7.4899", "60").
func trimDecimal(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// publishedNumber is a band limit as published: rounded up to 4 decimals, as a JSON number.
func publishedNumber(r *big.Rat) json.Number { return json.Number(trimDecimal(ceilDecimal(r, 4))) }
