package main

import "github.com/alecthomas/kong"

// CLI is the whole command line.
type CLI struct {
	Serve     ServeCmd     `cmd:"" help:"Run the account API, queue host, synchronous host and workers."`
	Migrate   MigrateCmd   `cmd:"" help:"Apply database migrations."`
	Accounts  AccountsCmd  `cmd:"" help:"Operator console: accounts."`
	Keys      KeysCmd      `cmd:"" help:"Operator console: API keys (the only place keys are minted)."`
	Credits   CreditsCmd   `cmd:"" help:"Operator console: grant or remove credits."`
	Passes    PassesCmd    `cmd:"" help:"Operator console: passes and promotions."`
	Users     UsersCmd     `cmd:"" help:"Operator console: users who sign in to the web console."`
	Catalogue CatalogueCmd `cmd:"" help:"Print the built-in catalogue (the starting point for serve --catalogue), or --check a file."`
	Plans     PlansCmd     `cmd:"" help:"Print the built-in plan figures (the starting point for serve --plans), or --check a file."`
	Version   VersionCmd   `cmd:"" help:"Print the version of this binary."`
	Run       RunCmd       `cmd:"" help:"Run a model through the Go SDK: upload --file inputs, follow progress, download the outputs."`
	Quote     QuoteCmd     `cmd:"" help:"Print a model's price rule before submitting."`

	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`
}

// Each command carries only the flags it reads, so --help lists none that do nothing.

// DataFlags locate the database (migrate needs nothing else).
type DataFlags struct {
	Data     string `default:"./data" help:"Data directory (SQLite database and local blobs)."`
	Database string `help:"Database: a SQLite file path or a postgres:// URL (default <data>/modelexec.db)."`
}

// StoreFlags locate the data and say how keys are hashed: serve and the console take the same
// ones, so the console works on the store the server runs on.
type StoreFlags struct {
	DataFlags
	Secret    string `help:"Deployment secret for key hashing, signed URLs and webhook key encryption. --dev keeps one in <data>/dev-secret."`
	KeyPrefix string `default:"svc_sk_" help:"API key prefix."`
}

// ConsoleFlags are the operator console's: the store, and --create for a new database (a
// console command never makes one unasked; serve and migrate always do).
type ConsoleFlags struct {
	StoreFlags
	Create bool `help:"Create the database when it does not exist (serve and migrate always do)."`
	UnusedLogFlags
}

// UnusedLogFlags are --log-level and --log-format where nothing is logged (the console,
// migrate): earlier releases listed them on every command, so scripts passing them still run,
// but --help no longer offers them.
type UnusedLogFlags struct {
	LogLevel  string `hidden:"" help:"Ignored: this command logs nothing."`
	LogFormat string `hidden:"" help:"Ignored: this command logs nothing."`
}

// LogFlags shape serve's structured log (the console commands log nothing).
type LogFlags struct {
	LogLevel  string `default:"info" enum:"debug,info,warn,error" help:"Log level."`
	LogFormat string `default:"text" enum:"text,json" help:"Log format."`
}
