// Command modelexec is the model execution service: one binary whose subcommands run the
// surfaces and workers (serve), apply migrations (migrate), and act as the operator's console
// (accounts, keys, credits). This package is the only place where adapters and the domain meet.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "modelexec:", err)
		os.Exit(1)
	}
}

// run parses args and runs one command. Every flag of serve, and the shared ones of the other
// commands (sharedEnv), has an environment equivalent: MODELEXEC_ followed by the flag name in
// upper case with dashes as underscores.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cli CLI
	exitCode := -1
	parser, err := kong.New(&cli,
		kong.Name("modelexec"),
		kong.Description("Model execution service: queue, synchronous and account API, billed in credits."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exitCode = code }),
		kong.Resolvers(envResolver(getenv)),
		kong.Vars{"version": versionString()},
		kong.Bind(&env{ctx: ctx, getenv: getenv, stdout: stdout, stderr: stderr}),
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
	if err != nil {
		return err
	}
	kctx, err := parser.Parse(args)
	if exitCode >= 0 {
		if exitCode == 0 {
			return nil // --help
		}
		return fmt.Errorf("exit %d", exitCode)
	}
	if err != nil {
		return err
	}
	return kctx.Run()
}

// env is what every command receives besides its flags.
type env struct {
	ctx    context.Context
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

// sharedEnv are the flags other commands than serve read from the environment too: where the
// data is and how keys are hashed (so the console works on the store the server uses), and the
// secrets better kept off the command line (users' --password, run's and quote's --key).
var sharedEnv = map[string]bool{
	"data": true, "database": true, "secret": true, "key-prefix": true,
	"password": true, "key": true,
}

// envResolver reads a flag from MODELEXEC_ + its name in upper case with dashes as
// underscores: every flag of serve, and only the shared ones of the other commands. A variable
// set for the server (MODELEXEC_STATUS, MODELEXEC_PLAN…) must not reach a console command's
// flag of the same name and change an account.
func envResolver(getenv func(string) string) kong.Resolver {
	return kong.ResolverFunc(func(_ *kong.Context, path *kong.Path, flag *kong.Flag) (any, error) {
		serve := path.Command != nil && path.Command.Name == "serve" && path.Command.Parent.Type == kong.ApplicationNode
		if !serve && !sharedEnv[flag.Name] {
			return nil, nil
		}
		name := "MODELEXEC_" + strings.ToUpper(strings.ReplaceAll(flag.Name, "-", "_"))
		v := getenv(name)
		if v == "" {
			return nil, nil
		}
		// A repeatable flag whose values hold commas (--openai-upstream) takes several values
		// from one variable separated by its envsep, as a list.
		if sep := flag.Tag.Get("envsep"); sep != "" {
			var vs []any
			for _, part := range strings.Split(v, sep) {
				if part = strings.TrimSpace(part); part != "" {
					vs = append(vs, part)
				}
			}
			return vs, nil
		}
		return v, nil
	})
}
