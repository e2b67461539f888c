package main

// Conventions every command follows (docs/client.md, "rolisctl"): -o
// table|json|yaml on the commands that print data, and distinct exit codes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"
)

// Exit codes.
const (
	exitOK          = 0
	exitGeneric     = 1 // any other failure
	exitUsage       = 2 // bad flags, arguments or input (INVALID_ARGUMENT too)
	exitNotFound    = 3 // a key that is absent (NOT_FOUND)
	exitConflict    = 4 // a condition that failed, a transaction aborted (ABORTED, FAILED_PRECONDITION, ALREADY_EXISTS)
	exitUnavailable = 5 // no server answers (UNAVAILABLE, DEADLINE_EXCEEDED)
)

// exitError ends rolisctl with a given code.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// usageErrorf is bad input from the command line: exit 2.
func usageErrorf(format string, args ...any) error {
	return exitError{exitUsage, fmt.Sprintf(format, args...)}
}

// exitCodeOf maps an error to the exit code: an exitError's own, cobra's
// complaints about the command line, the gRPC status of a failed call.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument",
		"flag needs an argument", "accepts ", "requires at least", "requires at most"} {
		if strings.HasPrefix(msg, p) {
			return exitUsage
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return exitUnavailable
	}
	// The innermost status: the client wraps what the server said.
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s, ok := status.FromError(e); ok && s.Code() != codes.Unknown {
			switch s.Code() {
			case codes.InvalidArgument, codes.OutOfRange:
				return exitUsage
			case codes.NotFound:
				return exitNotFound
			case codes.Aborted, codes.FailedPrecondition, codes.AlreadyExists:
				return exitConflict
			case codes.Unavailable, codes.DeadlineExceeded:
				return exitUnavailable
			}
			return exitGeneric
		}
	}
	return exitGeneric
}

// output is the -o flag of a command that prints data.
type output struct {
	format string
	asJSON bool // --json, where the command had it: the same as -o json
}

// addOutputFlag adds -o (and --json when legacyJSON: the flag it had before).
func addOutputFlag(cmd *cobra.Command, o *output, legacyJSON bool) {
	addOutputFlagTo(cmd, cmd.Flags(), o, legacyJSON)
}

// addOutputFlagTo adds them to a given flag set (the persistent one of a
// command whose subcommands print the same).
func addOutputFlagTo(cmd *cobra.Command, fs *pflag.FlagSet, o *output, legacyJSON bool) {
	fs.StringVarP(&o.format, "output", "o", "table", "output format: table, json or yaml")
	if legacyJSON {
		fs.BoolVar(&o.asJSON, "json", false, "the same as -o json")
	}
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// kind is the format asked for, after checking it.
func (o *output) kind() (string, error) {
	if o.asJSON {
		if o.format != "table" && o.format != "json" {
			return "", usageErrorf("--json and -o %s disagree", o.format)
		}
		return "json", nil
	}
	switch o.format {
	case "table", "json", "yaml":
		return o.format, nil
	}
	return "", usageErrorf("-o %q: want table, json or yaml", o.format)
}

func (o *output) structured() bool { k, _ := o.kind(); return k != "table" }

// print writes v as JSON (one line) or YAML; table prints it as a table.
func (o *output) print(out io.Writer, v any, table func(io.Writer)) error {
	k, err := o.kind()
	if err != nil {
		return err
	}
	switch k {
	case "json":
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	table(out)
	return nil
}

// checkOutput is a PreRunE: a bad -o fails before anything is done.
func checkOutput(o *output) func(*cobra.Command, []string) error {
	return func(*cobra.Command, []string) error {
		_, err := o.kind()
		return err
	}
}
