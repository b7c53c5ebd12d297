package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// MigrateCmd applies migrations.
// MigrateCmd needs only the database. The other flags earlier releases listed on it, which did
// nothing, are still accepted (hidden) so that scripts passing them keep running.
type MigrateCmd struct {
	DataFlags
	UnusedLogFlags
	Secret    string `hidden:"" help:"Ignored: migrating hashes no key."`
	KeyPrefix string `hidden:"" help:"Ignored: migrating mints no key."`
	Create    bool   `hidden:"" help:"Ignored: migrate always creates the database."`
}

func (c *MigrateCmd) Run(e *env) error {
	db, err := c.open(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintln(e.stdout, "migrations applied")
	return nil
}

// AccountsCmd groups account commands.
type AccountsCmd struct {
	Create AccountsCreateCmd `cmd:"" help:"Create an account."`
	Set    AccountsSetCmd    `cmd:"" help:"Change an account's status, plan or monthly allowance."`
	Show   AccountsShowCmd   `cmd:"" help:"Show an account."`
}

type AccountsCreateCmd struct {
	ConsoleFlags
	Plan      string `default:"pro" enum:"free,pro,max,ultimate" help:"Plan."`
	Credits   int64  `default:"0" help:"Opening balance in credits."`
	Allowance int64  `default:"-1" help:"Monthly credit allowance (default: the plan's)."`
	CreatedAt string `help:"Creation time (RFC 3339, such as 2025-01-31T00:00:00Z; not after now) for accounts imported from elsewhere; limits are x0.2 for 24 hours after it."`
	PassOnly  bool   `help:"A pass-only plan: jobs run only when a pass or promotion pays."`
	JSON      bool   `help:"Print JSON."`
}

func (c *AccountsCreateCmd) Run(e *env) error {
	created, err := createdAt(c.CreatedAt, utcNow())
	if err != nil {
		return err
	}
	db, err := c.openExisting(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	plan := auth.Plan(c.Plan)
	allowance := c.Allowance
	if allowance < 0 {
		allowance = auth.DefaultMonthlyAllowance(plan)
	}
	// The opening balance stands for the month the account is created in here, whatever
	// --created-at says; the allowance is credited from the next UTC month on.
	a := auth.Account{ID: auth.NewID("acct_"), Plan: plan, Status: auth.Live, Balance: c.Credits, MonthlyAllowance: allowance,
		AllowancePeriod: auth.Period(utcNow()), CreatedAt: created.UTC(), PassOnly: c.PassOnly}
	if err := ledger.New(db, utcNow).CreateAccount(e.ctx, a); err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(e.stdout).Encode(map[string]string{"id": a.ID})
	}
	fmt.Fprintf(e.stdout, "account %s created (plan %s, %d credits)\n", a.ID, a.Plan, a.Balance)
	return nil
}

// createdAt is the creation time --created-at gives (now when empty): an RFC 3339 time not
// after now, since an account created in the future would be held to the new-account limits
// until then.
func createdAt(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return now, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--created-at %q: want an RFC 3339 time such as 2025-01-31T00:00:00Z", v)
	}
	if t.After(now) {
		return time.Time{}, fmt.Errorf("--created-at %s is in the future: an imported account was created before now", v)
	}
	return t, nil
}

type AccountsSetCmd struct {
	ConsoleFlags
	ID        string `arg:"" help:"Account id."`
	Status    string `enum:",live,banned,suspended,limited" default:"" help:"New status."`
	Plan      string `enum:",free,pro,max,ultimate" default:"" help:"New plan."`
	Allowance int64  `default:"-1" help:"New monthly allowance (with --plan, default: the plan's)."`
	PassOnly  string `enum:",on,off" default:"" help:"Put the account on (on) or off (off) a pass-only plan."`
	JSON      bool   `help:"Print JSON."`
}

func (c *AccountsSetCmd) Run(e *env) error {
	db, err := c.openExisting(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	// One change, one transaction, through the ledger (a ban revokes the account's keys).
	var ch ledger.AccountChange
	if c.Status != "" {
		st := auth.Status(c.Status)
		ch.Status = &st
	}
	if c.PassOnly != "" {
		on := c.PassOnly == "on"
		ch.PassOnly = &on
	}
	if c.Plan != "" {
		plan := auth.Plan(c.Plan)
		ch.Plan = &plan
	}
	if c.Allowance >= 0 {
		v := ledger.Credits(c.Allowance)
		ch.Allowance = &v
	}
	if _, err := ledger.New(db, utcNow).ChangeAccount(e.ctx, c.ID, ch); err != nil {
		return accountErr(c.ID, err)
	}
	return printAccount(e, db, c.ID, c.JSON)
}

type AccountsShowCmd struct {
	ConsoleFlags
	ID   string `arg:"" help:"Account id."`
	JSON bool   `help:"Print JSON."`
}

func (c *AccountsShowCmd) Run(e *env) error {
	db, err := c.openExisting(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	return printAccount(e, db, c.ID, c.JSON)
}

func printAccount(e *env, db *sqlstore.DB, id string, asJSON bool) error {
	a, err := ledger.New(db, utcNow).Account(e.ctx, id)
	if err != nil {
		return accountErr(id, err)
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"id": a.ID, "plan": a.Plan, "status": a.Status,
			"balance": a.Balance, "monthly_allowance": a.MonthlyAllowance, "allowance_period": a.AllowancePeriod, "pass_only": a.PassOnly, "created_at": a.CreatedAt.Format(time.RFC3339)})
	}
	fmt.Fprintf(e.stdout, "account %s plan %s status %s balance %d allowance %d (credited through %s) created %s\n",
		a.ID, a.Plan, a.Status, a.Balance, a.MonthlyAllowance, a.AllowancePeriod, a.CreatedAt.Format(time.RFC3339))
	return nil
}

// PassesCmd groups pass and promotion commands.
type PassesCmd struct {
	Grant PassesGrantCmd `cmd:"" help:"Give an account a pass or a promotion that pays for jobs instead of credits."`
}

type PassesGrantCmd struct {
	ConsoleFlags
	Account     string   `required:"" help:"Account id."`
	Name        string   `required:"" help:"Name shown in coverage.pass and coverage.miss.pass."`
	Promotion   bool     `help:"A promotion rather than a pass."`
	Models      []string `help:"Model slugs it covers (the door), e.g. image-4b or svc-serverless/image-4b; default every model."`
	Catalogue   string   `help:"The catalogue file serve runs with (serve --catalogue), to check --models against; default the built-in one." type:"existingfile"`
	MaxCredits  int64    `help:"Largest quote it covers (the shape); 0: any."`
	Uses        int64    `default:"-1" help:"Jobs it pays for, 1 or more; -1: unlimited."`
	ExpiresDays int      `help:"Days until it ends, up to 3650; 0: never."`
	JSON        bool     `help:"Print JSON."`
}

func (c *PassesGrantCmd) Run(e *env) error {
	models, err := c.modelSlugs()
	if err != nil {
		return err
	}
	db, err := c.openExisting(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	p := ledger.Pass{ID: auth.NewID("pass_"), AccountID: c.Account, Name: c.Name, Promotion: c.Promotion, Models: models,
		MaxCredits: c.MaxCredits, UsesLeft: c.Uses}
	now := utcNow()
	if c.ExpiresDays < 0 || c.ExpiresDays > ledger.MaxPassDays {
		return fmt.Errorf("--expires-days is a number of days from 1 to %d (0: never ends)", ledger.MaxPassDays)
	}
	if c.ExpiresDays > 0 {
		p.ExpiresAt = now.AddDate(0, 0, c.ExpiresDays)
	}
	err = ledger.New(db, func() time.Time { return now }).GrantPass(e.ctx, p)
	if err != nil {
		return accountErr(c.Account, err)
	}
	if c.JSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"id": p.ID, "account": p.AccountID, "name": p.Name})
	}
	fmt.Fprintf(e.stdout, "pass %s (%s) granted to %s\n", p.ID, p.Name, p.AccountID)
	return nil
}

// modelSlugs checks --models against the catalogue: a slug it does not have would make a pass
// that covers nothing. The address form (svc-serverless/<slug>) names its slug.
func (c *PassesGrantCmd) modelSlugs() ([]string, error) {
	if len(c.Models) == 0 {
		return nil, nil
	}
	cat, err := loadCatalogue(c.Catalogue, catalog.Hosts{})
	if err != nil {
		return nil, err
	}
	var known []string
	for _, m := range cat.Models() {
		known = append(known, m.Slug)
	}
	known = append(known, cat.LanguageSlugs("")...)
	var out, unknown []string
	for _, m := range c.Models {
		slug := strings.TrimPrefix(strings.TrimSpace(m), catalog.Namespace+"/")
		if !slices.Contains(known, slug) {
			unknown = append(unknown, m)
			continue
		}
		if !slices.Contains(out, slug) {
			out = append(out, slug)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("--models: the catalogue has no model %s; a pass covers the slugs %s (or leave out --models to cover every model)",
			strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// CreditsCmd groups credit commands.
type CreditsCmd struct {
	Grant  CreditsGrantCmd  `cmd:"" help:"Add credits to an account; written to the ledger."`
	Remove CreditsRemoveCmd `cmd:"" help:"Take credits from an account (a negative grant); written to the ledger."`
}

type CreditsGrantCmd struct {
	ConsoleFlags
	Account string `arg:"" help:"Account id."`
	Amount  int64  `arg:"" help:"Credits, at most 1000000000 (credits remove takes them away)."`
	JSON    bool   `help:"Print JSON."`
}

func (c *CreditsGrantCmd) Run(e *env) error {
	db, err := c.openExisting(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	bal, err := ledger.New(db, utcNow).Grant(e.ctx, c.Account, ledger.Credits(c.Amount))
	if err != nil {
		return accountErr(c.Account, err)
	}
	if c.JSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"id": c.Account, "balance": bal})
	}
	fmt.Fprintf(e.stdout, "account %s balance %d\n", c.Account, bal)
	return nil
}

// CreditsRemoveCmd takes credits away: a grant of the negative amount (a command line cannot
// spell "-500" as an argument without "--").
type CreditsRemoveCmd struct {
	ConsoleFlags
	Account string `arg:"" help:"Account id."`
	Amount  int64  `arg:"" help:"Credits to take away, at most 1000000000."`
	JSON    bool   `help:"Print JSON."`
}

func (c *CreditsRemoveCmd) Run(e *env) error {
	if c.Amount < 0 {
		return fmt.Errorf("credits remove takes a positive amount (credits grant adds)")
	}
	g := CreditsGrantCmd{ConsoleFlags: c.ConsoleFlags, Account: c.Account, Amount: -c.Amount, JSON: c.JSON}
	return g.Run(e)
}

// KeysCmd groups key commands.
type KeysCmd struct {
	Mint       KeysMintCmd       `cmd:"" help:"Mint a key; the key is printed once and cannot be read back."`
	List       KeysListCmd       `cmd:"" help:"List an account's keys (ids only; keys are never shown again)."`
	Revoke     KeysRevokeCmd     `cmd:"" help:"Revoke a key (a stamp; revoking twice answers the original time)."`
	SetCeiling KeysSetCeilingCmd `cmd:"" help:"Set a key's monthly credit ceiling: a figure or 'plan'."`
}

type KeysMintCmd struct {
	ConsoleFlags
	Account     string `required:"" help:"Account id."`
	Scopes      string `help:"Comma-separated scopes (default: the ticked set; jobs:read and assets:read always on)."`
	ExpiresDays int    `default:"90" enum:"30,90,180,365" help:"Lifetime in days."`
	Ceiling     string `help:"Monthly credit ceiling: a whole positive figure, or 'plan' (default)."`
	Name        string `help:"What to call the key (at most 64 characters), shown beside its id."`
	JSON        bool   `help:"Print JSON: {\"key\": ..., \"id\": ...}."`
}

func (c *KeysMintCmd) Run(e *env) error {
	db, svc, err := c.console(e)
	if err != nil {
		return err
	}
	defer db.Close()
	p := auth.MintParams{AccountID: c.Account, LifetimeDays: c.ExpiresDays, Name: c.Name}
	if c.Scopes != "" {
		if p.Scopes, err = auth.ParseMintScopes(c.Scopes); err != nil {
			return err
		}
	}
	if c.Ceiling != "" {
		r, err := parseCeiling(c.Ceiling)
		if err != nil {
			return err
		}
		p.Ceiling = &r
	}
	m, err := svc.Mint(e.ctx, p)
	if errors.Is(err, auth.ErrNotFound) {
		return accountErr(c.Account, err)
	}
	if err != nil && p.Ceiling != nil {
		return ceilingErr(*p.Ceiling, err)
	}
	if err != nil {
		return consoleErr(err)
	}
	if c.JSON {
		return json.NewEncoder(e.stdout).Encode(map[string]string{"key": m.Key, "id": m.Record.ID})
	}
	fmt.Fprintf(e.stdout, "key %s (id %s, expires %s)\nThis is the only time the key is shown.\n", m.Key, m.Record.ID, m.Record.ExpiresAt.Format(time.RFC3339))
	return nil
}

func parseCeiling(s string) (auth.CeilingRequest, error) {
	if s == "plan" {
		return auth.CeilingRequest{FollowPlan: true}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return auth.CeilingRequest{}, fmt.Errorf("ceiling is a whole number or 'plan', not %q", s)
	}
	return auth.CeilingRequest{Amount: n}, nil
}

// consoleErr renders a catalogued refusal for the terminal.
func consoleErr(err error) error {
	if e, ok := apierr.As(err); ok {
		if len(e.Fields) > 0 {
			b, _ := json.Marshal(e.Fields)
			return fmt.Errorf("%s %s", e.Error(), b)
		}
	}
	return err
}

type KeysListCmd struct {
	ConsoleFlags
	Account string `required:"" help:"Account id."`
	JSON    bool   `help:"Print JSON."`
}

func (c *KeysListCmd) Run(e *env) error {
	db, svc, err := c.console(e)
	if err != nil {
		return err
	}
	defer db.Close()
	a, err := ledger.New(db, utcNow).Account(e.ctx, c.Account)
	if err != nil {
		return accountErr(c.Account, err)
	}
	keys, err := svc.Keys(e.ctx, c.Account)
	if err != nil {
		return accountErr(c.Account, err)
	}
	now := utcNow()
	type row struct {
		ID           string   `json:"id"`
		Name         string   `json:"name"`
		Status       string   `json:"status"`
		Scopes       []string `json:"scopes"`
		CreatedAt    string   `json:"created_at"`
		ExpiresAt    string   `json:"expires_at"`
		RevokedAt    *string  `json:"revoked_at"`
		ExpiringSoon bool     `json:"expiring_soon"`
		Ceiling      int64    `json:"credit_ceiling"`
		CeilingMode  string   `json:"ceiling_mode"`
		Spent        int64    `json:"credits_spent_period"`
	}
	rows := []row{}
	for _, k := range keys {
		r := row{ID: k.ID, Name: k.Name, Status: string(k.Status(now)), Scopes: auth.Strings(k.Scopes), CreatedAt: k.CreatedAt.Format(time.RFC3339),
			ExpiresAt: k.ExpiresAt.Format(time.RFC3339), ExpiringSoon: k.ExpiringSoon(now), Ceiling: k.Ceiling.Effective(a.MonthlyAllowance),
			CeilingMode: string(k.Ceiling.Mode), Spent: k.SpentIn(now)}
		if k.RevokedAt != nil {
			s := k.RevokedAt.Format(time.RFC3339)
			r.RevokedAt = &s
		}
		rows = append(rows, r)
	}
	if c.JSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"object": "list", "data": rows})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tEXPIRES\tCEILING\tSPENT\tSCOPES")
	for _, r := range rows {
		mark := ""
		if r.ExpiringSoon {
			mark = " (<14 days left)"
		}
		name := r.Name
		if name == "" {
			name = "-" // keeps the columns readable for a key minted without a name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%d\t%d\t%v\n", r.ID, name, r.Status, r.ExpiresAt, mark, r.Ceiling, r.Spent, r.Scopes)
	}
	return tw.Flush()
}

type KeysRevokeCmd struct {
	ConsoleFlags
	ID   string `arg:"" help:"Public key id (12 characters)."`
	JSON bool   `help:"Print JSON: {\"id\": ..., \"revoked_at\": ...}."`
}

func (c *KeysRevokeCmd) Run(e *env) error {
	db, svc, err := c.console(e)
	if err != nil {
		return err
	}
	defer db.Close()
	at, err := svc.Revoke(e.ctx, c.ID)
	if err != nil {
		return keyErr(c.ID, err)
	}
	if c.JSON {
		return json.NewEncoder(e.stdout).Encode(map[string]string{"id": c.ID, "revoked_at": at.Format(time.RFC3339Nano)})
	}
	fmt.Fprintf(e.stdout, "key %s revoked at %s\n", c.ID, at.Format(time.RFC3339Nano))
	return nil
}

type KeysSetCeilingCmd struct {
	ConsoleFlags
	ID        string `arg:"" help:"Public key id."`
	Ceiling   string `arg:"" help:"A whole positive figure, or 'plan'."`
	BySupport bool   `help:"Set as the support team: the figure binds the key."`
	JSON      bool   `help:"Print JSON."`
}

func (c *KeysSetCeilingCmd) Run(e *env) error {
	db, svc, err := c.console(e)
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := parseCeiling(c.Ceiling)
	if err != nil {
		return err
	}
	r.BySupport = c.BySupport
	ceil, err := svc.SetCeiling(e.ctx, c.ID, r)
	if err != nil {
		return keyErr(c.ID, ceilingErr(r, err))
	}
	// What binds the key: the figure, or the plan's monthly allowance it follows (as keys list
	// shows it).
	effective := ceil.Amount
	if k, err := db.Key(e.ctx, c.ID); err == nil {
		if a, err := svc.Account(e.ctx, k.AccountID); err == nil {
			effective = ceil.Effective(a.MonthlyAllowance)
		}
	}
	if c.JSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"id": c.ID, "ceiling_mode": ceil.Mode, "ceiling": ceil.Amount, "support_ceiling": ceil.Support,
			"credit_ceiling": effective})
	}
	if ceil.Mode == auth.FollowPlan && effective == 0 {
		fmt.Fprintf(e.stdout, "key %s has no ceiling (it follows the plan, which has no monthly allowance)\n", c.ID)
	} else if ceil.Mode == auth.FollowPlan {
		fmt.Fprintf(e.stdout, "key %s ceiling %d credits a month (follows the plan's allowance)\n", c.ID, effective)
	} else {
		fmt.Fprintf(e.stdout, "key %s ceiling %d credits a month\n", c.ID, effective)
	}
	return nil
}

// ceilingErr says in a sentence why a ceiling was refused.
func ceilingErr(r auth.CeilingRequest, err error) error {
	e, ok := apierr.As(err)
	if !ok {
		return err
	}
	limit := e.Fields["ceiling"]
	switch {
	case e.Code == apierr.CeilingTooHigh && r.Amount <= 0:
		return fmt.Errorf("a ceiling is a whole number of credits from 1 to %v on this key's plan, or 'plan' to follow the plan's monthly allowance (a key cannot be set to no cap)", limit)
	case e.Code == apierr.CeilingTooHigh:
		return fmt.Errorf("a ceiling of %d is above what this key's plan allows: give at most %v, or 'plan' to follow the plan's monthly allowance", r.Amount, limit)
	case e.Code == apierr.CeilingHeld:
		return fmt.Errorf("the support team holds this key's ceiling at %v: it can only be lowered below that (the support team lifts it with --by-support)", limit)
	}
	return consoleErr(err)
}

// console opens the store and the auth service for one console command.
func (f ConsoleFlags) console(e *env) (*sqlstore.DB, *auth.Service, error) {
	db, err := f.openExisting(e.ctx)
	if err != nil {
		return nil, nil, err
	}
	svc, err := f.authService(db, false, slog.New(slog.DiscardHandler), utcNow)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, svc, nil
}

// accountErr names the account a command failed on, and says plainly when there is none.
func accountErr(id string, err error) error {
	if errors.Is(err, auth.ErrNotFound) {
		return fmt.Errorf("there is no account %s", id)
	}
	return fmt.Errorf("account %s: %w", id, err)
}

// keyErr says plainly when a key id names no key.
func keyErr(id string, err error) error {
	if errors.Is(err, auth.ErrNotFound) {
		return fmt.Errorf("there is no key %s", id)
	}
	return err
}
