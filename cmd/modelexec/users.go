package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/modelexec/modelexec/internal/ledger"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// UsersCmd groups the web console's users.
type UsersCmd struct {
	Create UsersCreateCmd `cmd:"" help:"Create a web console user for an account (or an operator); prints the password when none is given."`
	List   UsersListCmd   `cmd:"" help:"List an account's web console users."`
}

type UsersCreateCmd struct {
	ConsoleFlags
	Account  string `help:"Account the user manages (required unless --operator)."`
	Operator bool   `help:"An operator: signs in to the operator pages, which manage every account."`
	Email    string `required:"" help:"Email address the user signs in with."`
	Password string `help:"Password (10 to 72 characters; better from MODELEXEC_PASSWORD than on the command line). Empty: a random one is printed once."`
	JSON     bool   `help:"Print JSON."`
}

func (c *UsersCreateCmd) Run(e *env) error {
	if c.Operator == (c.Account != "") {
		return errors.New("give --account ID for an account's user, or --operator for an operator")
	}
	db, err := c.openExisting(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if c.Account != "" {
		if _, err := ledger.New(db, utcNow).Account(e.ctx, c.Account); err != nil {
			return accountErr(c.Account, err)
		}
	}
	pw, shown := c.Password, false
	if pw == "" {
		pw, shown = randomPassword(), true
	}
	u, err := consoleSessions(db).CreateUser(e.ctx, auth.NewUser{AccountID: c.Account, Operator: c.Operator, Email: c.Email, Password: pw})
	if errors.Is(err, auth.ErrEmailTaken) {
		return fmt.Errorf("a console user with the email %s exists", c.Email)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		out := map[string]string{"id": u.ID, "email": u.Email}
		if shown {
			out["password"] = pw
		}
		return json.NewEncoder(e.stdout).Encode(out)
	}
	who := "account " + u.AccountID
	if u.Operator {
		who = "operator"
	}
	fmt.Fprintf(e.stdout, "console user %s (%s) created for %s\n", u.Email, u.ID, who)
	if shown {
		fmt.Fprintf(e.stdout, "password (shown once): %s\n", pw)
	}
	return nil
}

type UsersListCmd struct {
	ConsoleFlags
	Account string `required:"" help:"Account id."`
	JSON    bool   `help:"Print JSON."`
}

func (c *UsersListCmd) Run(e *env) error {
	db, err := c.openExisting(e.ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := ledger.New(db, utcNow).Account(e.ctx, c.Account); err != nil {
		return accountErr(c.Account, err)
	}
	us, err := consoleSessions(db).Users(e.ctx, c.Account)
	if err != nil {
		return err
	}
	if c.JSON {
		out := []map[string]string{}
		for _, u := range us {
			out = append(out, map[string]string{"id": u.ID, "email": u.Email, "created_at": u.CreatedAt.Format("2006-01-02T15:04:05Z")})
		}
		return json.NewEncoder(e.stdout).Encode(out)
	}
	for _, u := range us {
		fmt.Fprintf(e.stdout, "%s %s created %s\n", u.ID, u.Email, u.CreatedAt.Format("2006-01-02"))
	}
	return nil
}

// consoleSessions is the console's user service over the store; creating users needs no
// deployment secret (the password hash is bcrypt's, not keyed).
func consoleSessions(db *sqlstore.DB) *auth.Sessions {
	return auth.NewSessions(auth.SessionsConfig{Store: db, Now: utcNow})
}

// randomPassword is 26 random base32 characters (130 bits).
func randomPassword() string { return rand.Text() }
