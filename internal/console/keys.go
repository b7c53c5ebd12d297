package console

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

type keyRow struct {
	ID           string
	Console      bool   // the account's console key: listed, never revoked, holds no slot
	Name         string // the owner's name for the key; "Console" for the console's key
	Scopes       []scopeLabel
	Created      time.Time
	Expires      time.Time
	Revoked      *time.Time
	Status       string
	ExpiringSoon bool
	DaysLeft     int
	Spent        int64
	Ceiling      string
	LastUsed     time.Time // zero: never (noted about once a minute)
	// Changeable marks a live key of the owner's, whose ceiling the row's form changes (the
	// console's key has none; a revoked or expired key spends nothing more).
	Changeable bool
	// The ceiling form's values: the key's own, or those sent with a refused change, and the
	// refusal in words, shown next to the form.
	CeilingMode, CeilingAmount, CeilingError string
	// Held is the figure the support team set for the key (0: none): the most it may be raised to.
	Held int64
}

type scopeChoice struct {
	Name, Words     string
	Checked, Locked bool
}

type keysData struct {
	Keys      []keyRow
	Live, Max int
	Scopes    []scopeChoice
	Lifetimes []int
	Default   int
	Allowance int64
	// Minted is set once, on the page a mint redirects to: the only time the key is shown.
	Minted  string
	MintID  string
	APIBase string
	// Form values kept after a refusal.
	CeilingMode, CeilingAmount, Name string
	MaxName                          int
}

func (h *Handler) keysData(r *http.Request, v *viewer) (keysData, error) {
	// The console's key is listed from the account's first visit, before its first run.
	if _, err := h.Auth.ConsoleKey(r.Context(), v.Account.ID); err != nil {
		return keysData{}, err
	}
	recs, err := h.Auth.Keys(r.Context(), v.Account.ID)
	if err != nil {
		return keysData{}, err
	}
	var used map[string]time.Time
	if h.KeysUsed != nil {
		if used, err = h.KeysUsed.KeysLastUsed(r.Context(), v.Account.ID); err != nil {
			return keysData{}, err
		}
	}
	now := h.Now()
	d := keysData{Max: v.Account.Plan.MaxLiveKeys(), Lifetimes: auth.Lifetimes, Default: auth.DefaultLifetimeDays,
		Allowance: v.Account.MonthlyAllowance, APIBase: h.APIBase, CeilingMode: "plan", MaxName: auth.MaxKeyName}
	// The console's key first, then newest first: the key just minted or about to expire is
	// what the owner looks for.
	slices.SortFunc(recs, func(a, b auth.KeyRecord) int {
		if a.Console != b.Console {
			if a.Console {
				return -1
			}
			return 1
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	for _, k := range recs {
		st := k.Status(now)
		if k.HoldsSlot(now) {
			d.Live++
		}
		name := k.Name
		if k.Console {
			name = auth.ConsoleKeyName
		}
		row := keyRow{ID: k.ID, Console: k.Console, Name: name, Scopes: scopeLabels(k.Scopes), Created: k.CreatedAt, Expires: k.ExpiresAt,
			Revoked: k.RevokedAt, Status: string(st), ExpiringSoon: k.ExpiringSoon(now),
			DaysLeft: int(k.ExpiresAt.Sub(now).Hours() / 24), Spent: k.SpentIn(now), Ceiling: ceilingWords(k.Ceiling, v.Account.MonthlyAllowance),
			LastUsed: used[k.ID], Changeable: !k.Console && st == auth.KeyLive, Held: k.Ceiling.Support}
		switch k.Ceiling.Mode {
		case auth.FollowPlan:
			row.CeilingMode = "plan"
		case auth.Fixed:
			row.CeilingMode, row.CeilingAmount = "fixed", strconv.FormatInt(k.Ceiling.Amount, 10)
		}
		d.Keys = append(d.Keys, row)
	}
	for _, s := range auth.Current {
		d.Scopes = append(d.Scopes, scopeChoice{Name: string(s), Words: scopeWords[s], Checked: slices.Contains(auth.Ticked, s) || slices.Contains(auth.AlwaysOn, s),
			Locked: slices.Contains(auth.AlwaysOn, s)})
	}
	return d, nil
}

// ceilingWords is a key's ceiling as the keys page shows it: a figure, the plan's (with what
// it is now), or none.
func ceilingWords(c auth.Ceiling, monthlyAllowance int64) string {
	switch {
	case c.Mode == auth.Fixed:
		return groupDigits(c.Amount)
	case c.Mode == auth.NoCap:
		return "none"
	case monthlyAllowance == 0:
		return "plan (no cap)"
	}
	return "plan (" + groupDigits(c.Effective(monthlyAllowance)) + ")"
}

func (h *Handler) keys(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d, err := h.keysData(r, v)
	if err != nil {
		return err
	}
	var m mintedKey
	if h.revealed(w, r, v, "/console/keys", &m) {
		d.Minted, d.MintID = m.Key, m.ID
	}
	h.render(w, http.StatusOK, "keys", view{Title: "API keys", Nav: "keys", V: v, Data: d, Flash: h.flash(w, r)})
	return nil
}

// mintKey mints a key from the form: current scopes only, a lifetime of 30/90/180/365 days
// and a ceiling that follows the plan or is a figure within the spec's bounds. The answer is a
// redirect to the keys page, which shows the key once (reveal.go); the form is single-use
// (once.go), so neither a reload nor a resend mints a second key.
func (h *Handler) mintKey(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d, err := h.keysData(r, v)
	if err != nil {
		return err
	}
	again := func(status int, msg string) error {
		d.CeilingMode, d.CeilingAmount, d.Name = r.PostFormValue("ceiling_mode"), r.PostFormValue("ceiling"), r.PostFormValue("name")
		if days, err := strconv.Atoi(r.PostFormValue("expires_days")); err == nil && slices.Contains(auth.Lifetimes, days) {
			d.Default = days // the lifetime chosen, not the default, stays selected
		}
		for i := range d.Scopes {
			d.Scopes[i].Checked = d.Scopes[i].Locked || slices.Contains(r.PostForm["scope"], d.Scopes[i].Name)
		}
		h.render(w, status, "keys", view{Title: "API keys", Nav: "keys", V: v, Data: d, Error: msg})
		return nil
	}
	if refused := standing(v.Account, ratelimit.Read); refused != nil {
		return again(refused.status, refused.msg)
	}
	var scopes []auth.Scope
	for _, s := range r.PostForm["scope"] {
		if !auth.Mintable(auth.Scope(s)) {
			return again(http.StatusBadRequest, fmt.Sprintf("%q is not a scope a key can be minted with.", s))
		}
		scopes = append(scopes, auth.Scope(s))
	}
	if scopes == nil {
		scopes = []auth.Scope{} // nothing ticked: the always-on scopes only, not the default set
	}
	days, err := strconv.Atoi(r.PostFormValue("expires_days"))
	if err != nil || !slices.Contains(auth.Lifetimes, days) {
		return again(http.StatusBadRequest, "Pick a lifetime of 30, 90, 180 or 365 days.")
	}
	name, err := auth.KeyName(r.PostFormValue("name"))
	if err != nil {
		return again(http.StatusBadRequest, sentenceCase(err.Error())+".")
	}
	ceiling, msg := ceilingAsked(r, v.Account.MonthlyAllowance)
	if msg != "" {
		return again(http.StatusBadRequest, msg)
	}
	p := auth.MintParams{AccountID: v.Account.ID, Scopes: scopes, LifetimeDays: days, Name: name, Ceiling: &ceiling}
	m, err := h.Auth.Mint(r.Context(), p)
	if errors.Is(err, auth.ErrTooManyKeys) {
		return again(http.StatusConflict, fmt.Sprintf("Your plan allows %d live keys and they are all in use: revoke one first.", d.Max))
	}
	if e, ok := apierr.As(err); ok {
		return again(e.HTTPStatus(), ceilingText(e))
	}
	if err != nil {
		return err
	}
	if err := h.reveal(w, v, "/console/keys", mintedKey{Key: m.Key, ID: m.Record.ID}); err != nil {
		return err
	}
	h.redirectFlash(w, r, "/console/keys", fmt.Sprintf("Key %s minted. It is shown below once: copy it now. "+
		"If you did not copy it, revoke it and mint another.", m.Record.ID))
	return nil
}

// ceilingAsked reads a form's ceiling: the plan's unless "A fixed figure" is picked, then a
// whole number of credits (thousands separators allowed). Whether the figure is allowed is
// auth.Ceiling.Apply's to decide; a refusal here (msg) is only a figure that is not a number.
func ceilingAsked(r *http.Request, monthlyAllowance int64) (c auth.CeilingRequest, msg string) {
	if r.PostFormValue("ceiling_mode") != "fixed" {
		return auth.CeilingRequest{FollowPlan: true}, ""
	}
	n, err := strconv.ParseInt(strings.TrimSpace(strings.ReplaceAll(r.PostFormValue("ceiling"), ",", "")), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return c, fmt.Sprintf("The ceiling is a whole number, but far more than a key may have: give at most %s credits.",
			groupDigits(mostCeiling(monthlyAllowance)))
	}
	if err != nil {
		return c, "The ceiling is a whole number of credits."
	}
	return auth.CeilingRequest{Amount: n}, ""
}

// ceilingText says a refused mint or ceiling change for a person; a refused ceiling says the
// most the key may have, from the refusal's `ceiling` (spec 02, per-key credit ceilings #3
// and #4: ceiling_too_high, ceiling_held).
func ceilingText(e *apierr.Error) string {
	most, ok := e.Fields["ceiling"].(int64)
	if !ok || (e.Code != apierr.CeilingTooHigh && e.Code != apierr.CeilingHeld) {
		return e.Text()
	}
	return fmt.Sprintf("%s Give at most %s credits.", e.Text(), groupDigits(most))
}

// mostCeiling is the highest fixed ceiling a key may have under the account's allowance, as
// the ceiling rules decide it (auth.Ceiling.Apply).
func mostCeiling(monthlyAllowance int64) int64 {
	_, err := auth.Ceiling{}.Apply(auth.CeilingRequest{Amount: math.MaxInt64}, monthlyAllowance)
	if e, ok := apierr.As(err); ok {
		if most, ok := e.Fields["ceiling"].(int64); ok {
			return most
		}
	}
	return math.MaxInt64
}

// mintedKey is the key a mint leaves for the page it redirects to (reveal.go).
type mintedKey struct {
	Key string `json:"key"`
	ID  string `json:"id"`
}

// revokeKey stamps one of the account's own keys; a key of another account is not found, and
// the console's key is refused (409): the playground's runs are charged under it.
func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, v *viewer) error {
	id := r.PathValue("id")
	recs, err := h.Auth.Keys(r.Context(), v.Account.ID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(recs, func(k auth.KeyRecord) bool { return k.ID == id }) {
		return errNotFound
	}
	at, err := h.Auth.Revoke(r.Context(), id)
	if errors.Is(err, auth.ErrConsoleKey) {
		d, err := h.keysData(r, v)
		if err != nil {
			return err
		}
		h.render(w, http.StatusConflict, "keys", view{Title: "API keys", Nav: "keys", V: v, Data: d,
			Error: fmt.Sprintf("Key %s is the %s key: runs from the playground are charged under it, so it cannot be revoked. "+
				"It has no secret, signs no API request and holds no live-key slot.", id, auth.ConsoleKeyName)})
		return nil
	}
	if err != nil {
		return err
	}
	h.redirectFlash(w, r, "/console/keys", fmt.Sprintf("Key %s revoked at %s.", id, at.UTC().Format(dateLayout)))
	return nil
}

// setCeiling changes the monthly credit ceiling of one of the account's own live keys from
// its row's form: the plan's, or a fixed figure (spec 02, per-key credit ceilings #4).
// auth.Service.SetCeiling applies the rules (auth.Ceiling.Apply): looser or tighter within the
// plan's bound (CEIL-06), and never above a figure the support team set, nor back to the plan
// past it (CEIL-07, ceiling_held); the month's spend so far stays counted. A key of another
// account is not found; the console's key, which has no ceiling, is refused (409), as is a
// revoked or expired key. A refused figure is shown again next to the form, in words.
func (h *Handler) setCeiling(w http.ResponseWriter, r *http.Request, v *viewer) error {
	id := r.PathValue("id")
	recs, err := h.Auth.Keys(r.Context(), v.Account.ID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(k auth.KeyRecord) bool { return k.ID == id })
	if i < 0 {
		return errNotFound
	}
	k, now := recs[i], h.Now()
	// refused re-renders the keys page: next to the key's form with what was sent when msg is
	// about the figure (inRow), above the table otherwise.
	refused := func(status int, msg string, inRow bool) error {
		d, err := h.keysData(r, v)
		if err != nil {
			return err
		}
		above := msg
		if j := slices.IndexFunc(d.Keys, func(row keyRow) bool { return row.ID == id }); inRow && j >= 0 && d.Keys[j].Changeable {
			d.Keys[j].CeilingMode, d.Keys[j].CeilingAmount = r.PostFormValue("ceiling_mode"), r.PostFormValue("ceiling")
			d.Keys[j].CeilingError, above = msg, ""
		}
		h.render(w, status, "keys", view{Title: "API keys", Nav: "keys", V: v, Data: d, Error: above})
		return nil
	}
	if st := k.Status(now); st != auth.KeyLive && !k.Console {
		return refused(http.StatusConflict, fmt.Sprintf("Key %s is %s: nothing more is charged under it, so its ceiling was left as it is.", id, st), false)
	}
	if mode := r.PostFormValue("ceiling_mode"); mode != "plan" && mode != "fixed" {
		return refused(http.StatusBadRequest, "Pick “Follow the plan” or “A fixed figure” for the key's ceiling.", true)
	}
	ask, msg := ceilingAsked(r, v.Account.MonthlyAllowance)
	if msg != "" {
		return refused(http.StatusBadRequest, msg, true)
	}
	c, err := h.Auth.SetCeiling(r.Context(), id, ask)
	if errors.Is(err, auth.ErrConsoleKey) {
		return refused(http.StatusConflict, fmt.Sprintf("Key %s is the %s key: it has no monthly credit ceiling of its own. "+
			"Runs from the playground are bounded by the account's balance, passes and promotions.", id, auth.ConsoleKeyName), false)
	}
	if e, ok := apierr.As(err); ok {
		return refused(e.HTTPStatus(), ceilingText(e), true)
	}
	if err != nil {
		return err
	}
	h.redirectFlash(w, r, "/console/keys", fmt.Sprintf("Key %s's monthly credit ceiling is now %s. The %s credits spent under it this month still count.",
		id, ceilingWords(c, v.Account.MonthlyAllowance), groupDigits(k.SpentIn(now))))
	return nil
}
