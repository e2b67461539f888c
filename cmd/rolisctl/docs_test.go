package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// documentedFlags reads the "Flag reference" table of docs/client.md:
// command path ("" for the global flags) -> flag -> "name[ short][=default]".
func documentedFlags(t *testing.T, doc string) map[string]map[string]string {
	t.Helper()
	i := strings.Index(doc, "### Flag reference")
	if i < 0 {
		t.Fatal(`docs/client.md has no "### Flag reference" section`)
	}
	section := doc[i:]
	if j := strings.Index(section[1:], "\n#"); j >= 0 {
		section = section[:j+1]
	}
	row := regexp.MustCompile("^\\| (\\(global\\)|`[a-z ]+`) \\|(.*)\\|$")
	flag := regexp.MustCompile("(?:`-([a-z])`/)?`--([a-z0-9-]+)`(?: \\(([^)]*)\\))?")
	out := map[string]map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cmd := strings.Trim(m[1], "`")
		if cmd == "(global)" {
			cmd = ""
		}
		flags := map[string]string{}
		for _, f := range flag.FindAllStringSubmatch(m[2], -1) {
			flags[f[2]] = describe(f[2], f[1], f[3])
		}
		out[cmd] = flags
	}
	return out
}

func describe(name, short, def string) string {
	s := name
	if short != "" {
		s += " -" + short
	}
	if def != "" {
		s += "=" + def
	}
	return s
}

// commandFlags is the same from cobra: each command's own flags (the root's
// persistent ones for ""), defaults as the reference shows them (none for
// "", false and []).
func commandFlags(root *cobra.Command) map[string]map[string]string {
	out := map[string]map[string]string{}
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		flags := map[string]string{}
		add := func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			def := f.DefValue
			if def == "false" || def == "[]" {
				def = ""
			}
			flags[f.Name] = describe(f.Name, f.Shorthand, def)
		}
		if c == root {
			c.PersistentFlags().VisitAll(add)
			c.LocalNonPersistentFlags().VisitAll(add) // --version
		} else {
			c.LocalNonPersistentFlags().VisitAll(add)
			c.PersistentFlags().VisitAll(add)
		}
		out[path] = flags
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub, strings.TrimSpace(path+" "+sub.Name()))
		}
	}
	walk(root, "")
	return out
}

// compareFlags lists every difference between the documented flags and the
// commands' (empty: they match).
func compareFlags(doc, code map[string]map[string]string) []string {
	var diffs []string
	for cmd, flags := range code {
		d, ok := doc[cmd]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("command %q is not in the flag reference", cmd))
			continue
		}
		for name, want := range flags {
			switch got, ok := d[name]; {
			case !ok:
				diffs = append(diffs, fmt.Sprintf("%q: --%s (%s) is not documented", cmd, name, want))
			case got != want:
				diffs = append(diffs, fmt.Sprintf("%q: documented %s, the command has %s", cmd, got, want))
			}
		}
		for name := range d {
			if _, ok := flags[name]; !ok {
				diffs = append(diffs, fmt.Sprintf("%q: --%s is documented but the command has no such flag", cmd, name))
			}
		}
	}
	for cmd := range doc {
		if _, ok := code[cmd]; !ok {
			diffs = append(diffs, fmt.Sprintf("documented command %q does not exist", cmd))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func rootForDocs(t *testing.T) *cobra.Command {
	t.Helper()
	for _, env := range []string{"ROLISCTL_ENDPOINT", "ROLISCTL_TLS_CA", "ROLISCTL_TLS_CERT", "ROLISCTL_TLS_KEY"} {
		t.Setenv(env, "") // the defaults, not this shell's
	}
	root := newRootCmd()
	root.InitDefaultVersionFlag()
	return root
}

func TestDocumentedFlagsMatchTheCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "client.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range compareFlags(documentedFlags(t, string(b)), commandFlags(rootForDocs(t))) {
		t.Error(d)
	}
}

// The comparison sees a wrong default, a missing flag, an extra one and a
// missing command.
func TestFlagComparisonFindsEveryKindOfDifference(t *testing.T) {
	doc := documentedFlags(t, "### Flag reference\n\n| command | flags |\n|---|---|\n"+
		"| (global) | `--endpoint` (127.0.0.1:7070), `--timeout` (10s), `--tls-ca`, `--tls-cert`, `--tls-key`, `--tls-server-name`, `-v`/`--version` |\n"+
		"| `bench` | `--batch` (16), `--nonesuch` |\n")
	diffs := strings.Join(compareFlags(doc, commandFlags(rootForDocs(t))), "\n")
	for _, want := range []string{
		`"bench": documented batch=16, the command has batch=32`,
		`"bench": --nonesuch is documented but the command has no such flag`,
		`"bench": --seconds (seconds=10) is not documented`,
		`command "status" is not in the flag reference`,
	} {
		if !strings.Contains(diffs, want) {
			t.Errorf("no %q in\n%s", want, diffs)
		}
	}
	if strings.Contains(diffs, `""`) {
		t.Errorf("the global flags match, yet:\n%s", diffs)
	}
}
