package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// AccountDirectory lists accounts for the operator pages: newest first, a bounded page of those
// created before a (time, id) cursor; a zero time starts from the newest.
type AccountDirectory interface {
	Accounts(ctx context.Context, before time.Time, beforeID string, limit int) ([]auth.Account, error)
}

// accountsPerPage bounds one page of the account list.
const accountsPerPage = 50

// The operator pages: every account, and on each the changes the operator CLI makes (plan,
// status, allowance, credits, passes, console users). Every credit or account change goes
// through the ledger service, users through the session service; each is logged with the
// operator who made it.
func (h *Handler) operatorRoutes(mux *http.ServeMux) {
	mux.Handle("GET /console/operator/accounts", h.operator(h.opAccounts))
	mux.Handle("POST /console/operator/accounts", h.operator(h.opCreateAccount))
	mux.Handle("GET /console/operator/accounts/{id}", h.operator(h.opAccount))
	mux.Handle("POST /console/operator/accounts/{id}/plan", h.operator(h.opSetPlan))
	mux.Handle("POST /console/operator/accounts/{id}/status", h.operator(h.opSetStatus))
	mux.Handle("POST /console/operator/accounts/{id}/allowance", h.operator(h.opSetAllowance))
	mux.Handle("POST /console/operator/accounts/{id}/credits", h.operator(h.opGrantCredits))
	mux.Handle("POST /console/operator/accounts/{id}/passes", h.operator(h.opGrantPass))
	mux.Handle("POST /console/operator/accounts/{id}/users", h.operator(h.opCreateUser))
}

type opAccountsData struct {
	Accounts []auth.Account
	Next     string // cursor of the next (older) page; empty on the last
	First    bool   // this is the newest page
	Plans    []auth.Plan
	// Form values kept after a refusal.
	Plan, Credits, Allowance string
	PassOnly                 bool
}

// opAccounts is the account list, newest first, paged by a (created, id) cursor.
func (h *Handler) opAccounts(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d, err := h.opAccountsData(r)
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "operator_accounts", view{Title: "Accounts", Nav: "accounts", V: v, Data: d, Flash: h.flash(w, r)})
	return nil
}

func (h *Handler) opAccountsData(r *http.Request) (opAccountsData, error) {
	d := opAccountsData{Plans: auth.Plans, Plan: string(auth.Pro), First: true}
	if h.Directory == nil {
		return d, refuse(http.StatusServiceUnavailable, "The account list is not available on this deployment.")
	}
	var before time.Time
	var beforeID string
	if c := r.URL.Query().Get("before"); c != "" {
		var ok bool
		if before, beforeID, ok = parseAccountCursor(c); !ok {
			return d, refuse(http.StatusBadRequest, "That page link is malformed; start again from the first page.")
		}
		d.First = false
	}
	as, err := h.Directory.Accounts(r.Context(), before, beforeID, accountsPerPage+1)
	if err != nil {
		return d, err
	}
	if len(as) > accountsPerPage {
		as = as[:accountsPerPage]
		last := as[len(as)-1]
		d.Next = fmt.Sprintf("%d.%s", last.CreatedAt.UnixMicro(), last.ID)
	}
	d.Accounts = as
	return d, nil
}

// parseAccountCursor reads "micros.id".
func parseAccountCursor(c string) (time.Time, string, bool) {
	at, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 64 {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

// opCreateAccount opens an account as `modelexec accounts create` does: live, the plan's
// allowance unless another is given, the opening credits written to the ledger as a grant.
func (h *Handler) opCreateAccount(w http.ResponseWriter, r *http.Request, v *viewer) error {
	again := func(status int, msg string) error {
		d, err := h.opAccountsData(r)
		if err != nil {
			return err
		}
		d.Plan, d.Credits, d.Allowance = r.PostFormValue("plan"), r.PostFormValue("credits"), r.PostFormValue("allowance")
		d.PassOnly = r.PostFormValue("pass_only") != ""
		h.render(w, status, "operator_accounts", view{Title: "Accounts", Nav: "accounts", V: v, Data: d, Error: msg})
		return nil
	}
	plan, err := auth.ParsePlan(r.PostFormValue("plan"))
	if err != nil {
		return again(http.StatusBadRequest, "Pick a plan: free, pro, max or ultimate.")
	}
	credits, ok := wholeNumber(r.PostFormValue("credits"), 0)
	if !ok { // its range is the ledger's (CreateAccount), refused below
		return again(http.StatusBadRequest, "The opening credits are a whole number, zero or more.")
	}
	allowance, ok := wholeNumber(r.PostFormValue("allowance"), auth.DefaultMonthlyAllowance(plan))
	if !ok {
		return again(http.StatusBadRequest, "The monthly allowance is a whole number, zero or more (empty: the plan's).")
	}
	now := h.Now()
	a := auth.Account{ID: auth.NewID("acct_"), Plan: plan, Status: auth.Live, Balance: credits, MonthlyAllowance: allowance,
		AllowancePeriod: auth.Period(now), CreatedAt: now.UTC(), PassOnly: r.PostFormValue("pass_only") != ""}
	var refused *ledger.InputError
	if err := h.Ledger.CreateAccount(r.Context(), a); errors.As(err, &refused) {
		return again(http.StatusBadRequest, sentenceCase(refused.Reason)+".")
	} else if err != nil {
		return err
	}
	h.audit(r, v, a.ID, "account created", "plan", a.Plan, "credits", credits, "allowance", allowance, "pass_only", a.PassOnly)
	h.redirectFlash(w, r, "/console/operator/accounts/"+a.ID,
		fmt.Sprintf("Account %s created on the %s plan with %s credits.", a.ID, a.Plan, groupDigits(credits)))
	return nil
}

type opAccountData struct {
	Account  auth.Account
	Passes   []opPass
	Users    []auth.User
	Plans    []auth.Plan
	Statuses []auth.Status
	Period   string
	// NewUser is set once, on the page a user creation with a random password redirects to: the only
	// time it is shown.
	NewUser *newUserShown
	// Form values kept after a refusal.
	Form map[string]string
}

type opPass struct {
	ledger.Pass
	Active bool
}

type newUserShown struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

var accountStatuses = []auth.Status{auth.Live, auth.Limited, auth.Suspended, auth.Banned}

func (h *Handler) opAccountData(r *http.Request) (opAccountData, error) {
	a, err := h.Ledger.Account(r.Context(), r.PathValue("id"))
	if errors.Is(err, auth.ErrNotFound) {
		return opAccountData{}, errNotFound
	}
	if err != nil {
		return opAccountData{}, err
	}
	now := h.Now()
	d := opAccountData{Account: a, Plans: auth.Plans, Statuses: accountStatuses, Period: auth.Period(now), Form: map[string]string{}}
	passes, err := h.Ledger.Passes(r.Context(), a.ID)
	if err != nil {
		return d, err
	}
	for _, p := range passes {
		d.Passes = append(d.Passes, opPass{Pass: p, Active: p.Active(now)})
	}
	if d.Users, err = h.Sessions.Users(r.Context(), a.ID); err != nil {
		return d, err
	}
	return d, nil
}

func (h *Handler) opAccount(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d, err := h.opAccountData(r)
	if err != nil {
		return err
	}
	var nu newUserShown
	if h.revealed(w, r, v, "/console/operator/accounts/"+d.Account.ID, &nu) {
		d.NewUser = &nu
	}
	h.renderAccount(w, http.StatusOK, v, d, h.flash(w, r), "")
	return nil
}

func (h *Handler) renderAccount(w http.ResponseWriter, status int, v *viewer, d opAccountData, flash, msg string) {
	h.render(w, status, "operator_account", view{Title: "Account " + d.Account.ID, Nav: "accounts", V: v, Data: d, Flash: flash, Error: msg})
}

// opChange is the shape of every account form: read the account (404 when there is none),
// check the form, make the change, log it and go back to the account with a message. check
// answers a refusal for a person (the page is shown again with it) or the change to make.
func (h *Handler) opChange(w http.ResponseWriter, r *http.Request, v *viewer,
	apply func(ctx context.Context, a auth.Account) (msg string, refusal string, err error)) error {
	d, err := h.opAccountData(r)
	if err != nil {
		return err
	}
	msg, refusal, err := apply(r.Context(), d.Account)
	var refused *ledger.InputError
	if errors.As(err, &refused) {
		refusal, err = sentenceCase(refused.Reason)+".", nil
	}
	if err != nil {
		return err
	}
	if refusal != "" {
		for k, vs := range r.PostForm {
			if k != "csrf" && len(vs) > 0 {
				d.Form[k] = vs[0]
			}
		}
		h.renderAccount(w, http.StatusBadRequest, v, d, "", refusal)
		return nil
	}
	h.redirectFlash(w, r, "/console/operator/accounts/"+d.Account.ID, msg)
	return nil
}

// opSetPlan changes the plan; the allowance becomes the new plan's (accounts set --plan).
func (h *Handler) opSetPlan(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return h.opChange(w, r, v, func(ctx context.Context, a auth.Account) (string, string, error) {
		plan, err := auth.ParsePlan(r.PostFormValue("plan"))
		if err != nil {
			return "", "Pick a plan: free, pro, max or ultimate.", nil
		}
		got, err := h.Ledger.ChangeAccount(ctx, a.ID, ledger.AccountChange{Plan: &plan})
		if err != nil {
			return "", "", err
		}
		h.audit(r, v, a.ID, "plan changed", "from", a.Plan, "to", got.Plan, "allowance", got.MonthlyAllowance)
		return fmt.Sprintf("Plan changed from %s to %s; monthly allowance %s credits.", a.Plan, got.Plan, groupDigits(got.MonthlyAllowance)), "", nil
	})
}

// opSetStatus changes the account's standing; a ban revokes every key in the same
// transaction (the ledger does it), which the message says.
func (h *Handler) opSetStatus(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return h.opChange(w, r, v, func(ctx context.Context, a auth.Account) (string, string, error) {
		st, err := auth.ParseStatus(r.PostFormValue("status"))
		if err != nil {
			return "", "Pick a status: live, limited, suspended or banned.", nil
		}
		if _, err := h.Ledger.ChangeAccount(ctx, a.ID, ledger.AccountChange{Status: &st}); err != nil {
			return "", "", err
		}
		h.audit(r, v, a.ID, "status changed", "from", a.Status, "to", st)
		msg := fmt.Sprintf("Status changed from %s to %s.", a.Status, st)
		if st == auth.Banned {
			msg += " Every key of the account was revoked."
		}
		return msg, "", nil
	})
}

// opSetAllowance sets the monthly allowance (accounts set --allowance).
func (h *Handler) opSetAllowance(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return h.opChange(w, r, v, func(ctx context.Context, a auth.Account) (string, string, error) {
		n, ok := wholeNumber(r.PostFormValue("allowance"), -1)
		if !ok || n < 0 {
			return "", "The monthly allowance is a whole number of credits, zero or more.", nil
		}
		c := ledger.Credits(n)
		if _, err := h.Ledger.ChangeAccount(ctx, a.ID, ledger.AccountChange{Allowance: &c}); err != nil {
			return "", "", err
		}
		h.audit(r, v, a.ID, "allowance changed", "from", a.MonthlyAllowance, "to", n)
		return fmt.Sprintf("Monthly allowance set to %s credits.", groupDigits(n)), "", nil
	})
}

// opGrantCredits adds or (negative) removes credits as a ledger grant entry (credits grant).
func (h *Handler) opGrantCredits(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return h.opChange(w, r, v, func(ctx context.Context, a auth.Account) (string, string, error) {
		n, ok := wholeNumber(r.PostFormValue("amount"), 0)
		if !ok || ledger.CheckGrant(ledger.Credits(n)) != nil {
			return "", fmt.Sprintf("The amount is a whole number of credits other than zero, at most %s either way (negative removes).", groupDigits(ledger.MaxGrant)), nil
		}
		bal, err := h.Ledger.Grant(ctx, a.ID, ledger.Credits(n))
		if err != nil {
			return "", "", err
		}
		h.audit(r, v, a.ID, "credits granted", "amount", n, "balance", int64(bal))
		verb := "Granted"
		if n < 0 {
			verb, n = "Removed", -n
		}
		return fmt.Sprintf("%s %s credits; the balance is now %s.", verb, groupDigits(n), groupDigits(int64(bal))), "", nil
	})
}

// opGrantPass gives a pass or a promotion (passes grant): a name, the models it covers (every
// model when none), the largest quote it covers, its uses and its lifetime.
func (h *Handler) opGrantPass(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return h.opChange(w, r, v, func(ctx context.Context, a auth.Account) (string, string, error) {
		name := strings.TrimSpace(r.PostFormValue("name"))
		var models []string
		for _, m := range strings.Split(r.PostFormValue("models"), ",") {
			if m = strings.TrimSpace(m); m == "" {
				continue
			}
			if h.Catalog != nil {
				mdl, ok := h.Catalog.Model(m)
				if !ok {
					mdl, ok = h.Catalog.ByAddress(m) // svc-serverless/<slug>, as the CLI takes it
				}
				if !ok {
					return "", fmt.Sprintf("%q is not a model of the catalogue.", m), nil
				}
				m = mdl.Slug
			}
			models = append(models, m)
		}
		maxCredits, ok := wholeNumber(r.PostFormValue("max_credits"), 0)
		if !ok {
			return "", "The largest quote covered is a whole number of credits (0: any).", nil
		}
		kind := r.PostFormValue("kind")
		if kind != "pass" && kind != "promotion" {
			return "", "The kind is pass or promotion.", nil
		}
		uses, ok := wholeNumber(r.PostFormValue("uses"), -1)
		// The form spells unlimited as an empty field (the ledger takes -1), so it words the
		// rule itself; the ledger's checkPass decides the rest, refusing through opChange.
		if !ok || uses == 0 || uses < -1 || uses == -1 && strings.TrimSpace(r.PostFormValue("uses")) != "" {
			return "", "Uses is a whole number of jobs, 1 or more (empty: unlimited).", nil
		}
		days, ok := wholeNumber(r.PostFormValue("expires_days"), 0)
		if !ok || days < 0 || days > ledger.MaxPassDays {
			return "", fmt.Sprintf("The lifetime is a number of days up to %d (empty or 0: never ends).", ledger.MaxPassDays), nil
		}
		p := ledger.Pass{ID: auth.NewID("pass_"), AccountID: a.ID, Name: name, Promotion: kind == "promotion",
			Models: models, MaxCredits: maxCredits, UsesLeft: uses}
		if days > 0 {
			p.ExpiresAt = h.Now().UTC().AddDate(0, 0, int(days))
		}
		if err := h.Ledger.GrantPass(ctx, p); err != nil {
			return "", "", err
		}
		kind = "Pass"
		if p.Promotion {
			kind = "Promotion"
		}
		h.audit(r, v, a.ID, "pass granted", "pass", p.ID, "name", p.Name, "promotion", p.Promotion)
		return fmt.Sprintf("%s %q (%s) granted.", kind, p.Name, p.ID), "", nil
	})
}

// opCreateUser creates a console user for the account (users create). Without a password a
// random one is made and shown once, on the page this answer redirects to (reveal.go).
func (h *Handler) opCreateUser(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d, err := h.opAccountData(r)
	if err != nil {
		return err
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	pw, shown := r.PostFormValue("password"), false
	if pw == "" {
		pw, shown = rand.Text(), true
	}
	again := func(status int, msg string) error {
		d.Form["email"] = email
		h.renderAccount(w, status, v, d, "", msg)
		return nil
	}
	if _, err := auth.NormalizeEmail(email); err != nil {
		return again(http.StatusBadRequest, "That is not an email address.")
	}
	if err := auth.CheckPassword(pw); err != nil {
		return again(http.StatusBadRequest, "The password is too short or too long: "+err.Error()+".")
	}
	u, err := h.Sessions.CreateUser(r.Context(), auth.NewUser{AccountID: d.Account.ID, Email: email, Password: pw})
	if errors.Is(err, auth.ErrEmailTaken) {
		return again(http.StatusConflict, "A console user with that email exists.")
	}
	if err != nil {
		return err
	}
	h.audit(r, v, d.Account.ID, "console user created", "user", u.ID)
	target := "/console/operator/accounts/" + d.Account.ID
	if shown {
		if err := h.reveal(w, v, target, newUserShown{Email: u.Email, Password: pw}); err != nil {
			return err
		}
	}
	h.redirectFlash(w, r, target, fmt.Sprintf("Console user %s created.", u.Email))
	return nil
}

// audit logs an operator's change: who, on which account, what.
func (h *Handler) audit(r *http.Request, v *viewer, account, what string, args ...any) {
	h.Log.InfoContext(r.Context(), "console: operator change", append([]any{"operator", v.User.ID, "account", account, "change", what}, args...)...)
}

// wholeNumber reads an integer typed by a person (spaces and thousands commas allowed); an
// empty field answers def.
func wholeNumber(s string, def int64) (int64, bool) {
	s = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(s, ",", ""), " ", ""))
	if s == "" {
		return def, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
