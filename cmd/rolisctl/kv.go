package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rolisdb/rolis/pkg/client"
	"github.com/spf13/cobra"
)

// kvJSON is a key and its value in -o json|yaml output.
type kvJSON struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func newGetCmd(g *globals) *cobra.Command {
	var table string
	var o output
	cmd := &cobra.Command{
		Use:     "get KEY",
		Short:   "Print the value of KEY alone (exit 3 if absent)",
		Args:    cobra.ExactArgs(1),
		PreRunE: checkOutput(&o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				v, found, err := c.Table(table).Get(ctx, []byte(args[0]))
				if err != nil {
					return err
				}
				if !found {
					return exitError{exitNotFound, fmt.Sprintf("%q not found", args[0])}
				}
				return o.print(cmd.OutOrStdout(), kvJSON{Key: args[0], Value: string(v)}, func(out io.Writer) {
					out.Write(v)
					fmt.Fprintln(out)
				})
			})
		},
	}
	cmd.Flags().StringVar(&table, "table", "", "table (default \"kv\")")
	addOutputFlag(cmd, &o, false)
	return cmd
}

func newPutCmd(g *globals) *cobra.Command {
	var table string
	cmd := &cobra.Command{
		Use:   "put KEY VALUE",
		Short: "Write KEY = VALUE (prints OK once it is on a majority)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if err := c.Table(table).Put(ctx, []byte(args[0]), []byte(args[1])); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "OK")
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&table, "table", "", "table (default \"kv\")")
	return cmd
}

func newDeleteCmd(g *globals) *cobra.Command {
	var table string
	cmd := &cobra.Command{
		Use:     "delete KEY",
		Aliases: []string{"del"},
		Short:   "Delete KEY (prints whether it existed)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				found, err := c.Table(table).Delete(ctx, []byte(args[0]))
				if err != nil {
					return err
				}
				if found {
					fmt.Fprintln(cmd.OutOrStdout(), "deleted")
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "not found")
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&table, "table", "", "table (default \"kv\")")
	return cmd
}

func newScanCmd(g *globals) *cobra.Command {
	var table string
	var limit uint32
	var keysOnly bool
	var o output
	cmd := &cobra.Command{
		Use:     "scan [START] [END]",
		Short:   "Print KEY<tab>VALUE lines of [START, END) in key order",
		Long:    "Print the keys in [START, END) with their values, one KEY<tab>VALUE line each. No START is the first key; no END is unbounded. With -o json|yaml: a list of {key, value}.",
		Args:    cobra.MaximumNArgs(2),
		PreRunE: checkOutput(&o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				var start, end []byte
				if len(args) > 0 {
					start = []byte(args[0])
				}
				if len(args) > 1 {
					end = []byte(args[1])
				}
				items, err := c.Table(table).Scan(ctx, start, end, limit)
				if err != nil {
					return err
				}
				if o.structured() {
					rows := make([]kvJSON, 0, len(items))
					for _, kv := range items {
						row := kvJSON{Key: string(kv.Key)}
						if !keysOnly {
							row.Value = string(kv.Value)
						}
						rows = append(rows, row)
					}
					return o.print(cmd.OutOrStdout(), rows, nil)
				}
				w := bufio.NewWriter(cmd.OutOrStdout())
				defer w.Flush()
				for _, kv := range items {
					w.Write(kv.Key)
					if !keysOnly {
						w.WriteByte('\t')
						w.Write(kv.Value)
					}
					w.WriteByte('\n')
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&table, "table", "", "table (default \"kv\")")
	cmd.Flags().Uint32Var(&limit, "limit", 0, "most keys to print (0 = the server's default)")
	cmd.Flags().BoolVar(&keysOnly, "keys-only", false, "print keys only")
	addOutputFlag(cmd, &o, false)
	return cmd
}

func newTxnCmd(g *globals) *cobra.Command {
	var ops []string
	var interactive bool
	var table string
	var o output
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "Run operations as one transaction (from --op flags or stdin lines)",
		Long: `Run operations as one transaction. Each operation is one --op flag or,
without --op, one line of standard input:

  get KEY
  put KEY VALUE
  delete KEY
  put-if KEY VALUE EXPECTED      write only if the value is EXPECTED
  put-if-absent KEY VALUE        write only if KEY is absent
  scan START END [LIMIT]         END "" = unbounded

Words may be double-quoted with Go escapes ("a b", "\x00"). Blank lines and
lines starting with # are skipped. By default the operations run as one
one-shot transaction (Execute, one round trip; a failed put-if writes
nothing and exits 4). With --interactive they run one by one inside an
interactive transaction (Begin ... Commit), retried on conflicts.

Output: one line per read: "KEY<tab>VALUE", "KEY<tab>(not found)", or the
scanned KEY<tab>VALUE lines; then "OK". With -o json|yaml: {committed,
reads: [{key, value, found}]}.`,
		Args:    cobra.NoArgs,
		PreRunE: checkOutput(&o),
		RunE: func(cmd *cobra.Command, args []string) error {
			lines := ops
			if len(lines) == 0 {
				var err error
				if lines, err = readLines(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			parsed, err := parseOps(lines, table)
			if err != nil {
				return usageErrorf("%v", err)
			}
			if len(parsed) == 0 {
				return usageErrorf("no operations")
			}
			return g.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				w := bufio.NewWriter(cmd.OutOrStdout())
				defer w.Flush()
				var results []client.OpResult
				if interactive {
					results, err = runInteractive(ctx, c, parsed)
				} else {
					var res *client.Result
					if res, err = c.Execute(ctx, parsed...); res != nil {
						results = res.Results
					}
				}
				failed := errors.Is(err, client.ErrConditionFailed)
				if err != nil && !failed {
					return err
				}
				if perr := o.print(w, txnJSON{Committed: !failed, Reads: txnReads(parsed, results)}, func(w io.Writer) {
					printResults(w, parsed, results)
					if !failed {
						fmt.Fprintf(w, "OK\n")
					}
				}); perr != nil {
					return perr
				}
				if failed {
					w.Flush()
					return exitError{exitConflict, "condition failed: nothing was written"}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&ops, "op", nil, "an operation, e.g. --op 'put k v' (repeatable)")
	cmd.Flags().BoolVar(&interactive, "interactive", false, "run as an interactive transaction instead of one Execute")
	cmd.Flags().StringVar(&table, "table", "", "table of every operation (default \"kv\")")
	addOutputFlag(cmd, &o, false)
	return cmd
}

// txnJSON is the -o json|yaml output of txn.
type txnJSON struct {
	Committed bool       `json:"committed"`
	Reads     []readJSON `json:"reads"`
}

type readJSON struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	Found bool   `json:"found"`
}

// txnReads lists what the reads of a transaction saw, in order.
func txnReads(ops []client.Op, results []client.OpResult) []readJSON {
	reads := []readJSON{}
	for i, op := range ops {
		if i >= len(results) {
			break
		}
		r := results[i]
		switch op.Kind {
		case client.OpGet:
			reads = append(reads, readJSON{Key: string(op.Key), Value: string(r.Value), Found: r.Found})
		case client.OpScan:
			for _, kv := range r.Items {
				reads = append(reads, readJSON{Key: string(kv.Key), Value: string(kv.Value), Found: true})
			}
		}
	}
	return reads
}

func readLines(r io.Reader) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// parseOps parses the txn operation language.
func parseOps(lines []string, table string) ([]client.Op, error) {
	var ops []client.Op
	for n, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		w, err := splitWords(t)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		want := func(min, max int) error {
			if len(w)-1 < min || len(w)-1 > max {
				return fmt.Errorf("line %d: %s takes %d..%d arguments, got %d", n+1, w[0], min, max, len(w)-1)
			}
			return nil
		}
		var op client.Op
		switch strings.ToLower(w[0]) {
		case "get":
			if err = want(1, 1); err == nil {
				op = client.Get([]byte(w[1]))
			}
		case "put", "set":
			if err = want(2, 2); err == nil {
				op = client.Put([]byte(w[1]), []byte(w[2]))
			}
		case "delete", "del":
			if err = want(1, 1); err == nil {
				op = client.Delete([]byte(w[1]))
			}
		case "put-if", "putif":
			if err = want(3, 3); err == nil {
				op = client.PutIf([]byte(w[1]), []byte(w[2]), []byte(w[3]))
			}
		case "put-if-absent":
			if err = want(2, 2); err == nil {
				op = client.PutIfAbsent([]byte(w[1]), []byte(w[2]))
			}
		case "scan":
			if err = want(1, 3); err == nil {
				var end []byte
				var limit uint64
				if len(w) > 2 && w[2] != "" {
					end = []byte(w[2])
				}
				if len(w) > 3 {
					if limit, err = strconv.ParseUint(w[3], 10, 32); err != nil {
						err = fmt.Errorf("line %d: bad limit %q", n+1, w[3])
					}
				}
				op = client.Scan([]byte(w[1]), end, uint32(limit))
			}
		default:
			err = fmt.Errorf("line %d: unknown operation %q (get, put, delete, put-if, put-if-absent, scan)", n+1, w[0])
		}
		if err != nil {
			return nil, err
		}
		ops = append(ops, op.In(table))
	}
	return ops, nil
}

// splitWords splits on blanks; a word may be a double-quoted Go string.
func splitWords(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out, nil
		}
		if s[0] == '"' {
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, errors.New("unterminated quote")
			}
			w, err := strconv.Unquote(s[:end+1])
			if err != nil {
				return nil, fmt.Errorf("bad quoted word %s: %w", s[:end+1], err)
			}
			out = append(out, w)
			s = s[end+1:]
			continue
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
}

func printResults(w io.Writer, ops []client.Op, results []client.OpResult) {
	for i, op := range ops {
		if i >= len(results) {
			break
		}
		r := results[i]
		switch op.Kind {
		case client.OpGet:
			if r.Found {
				fmt.Fprintf(w, "%s\t%s\n", op.Key, r.Value)
			} else {
				fmt.Fprintf(w, "%s\t(not found)\n", op.Key)
			}
		case client.OpScan:
			for _, kv := range r.Items {
				fmt.Fprintf(w, "%s\t%s\n", kv.Key, kv.Value)
			}
		}
	}
}

// runInteractive runs ops in an interactive transaction; a put-if whose
// condition fails ends it with client.ErrConditionFailed.
func runInteractive(ctx context.Context, c *client.Client, ops []client.Op) ([]client.OpResult, error) {
	var results []client.OpResult
	err := c.Txn(ctx, func(tx *client.Tx) error {
		results = results[:0]
		for _, op := range ops {
			t := tx.Table(op.Table)
			var r client.OpResult
			var err error
			switch op.Kind {
			case client.OpGet:
				r.Value, r.Found, err = t.Get(ctx, op.Key)
			case client.OpPut:
				err = t.Put(ctx, op.Key, op.Value)
			case client.OpDelete:
				r.Found, err = t.Delete(ctx, op.Key)
			case client.OpScan:
				r.Items, r.More, err = t.Scan(ctx, op.Key, op.EndKey, op.Limit)
			case client.OpPutIf:
				var cur []byte
				cur, r.Found, err = t.Get(ctx, op.Key)
				if err == nil {
					if (op.ExpectAbsent && r.Found) || (!op.ExpectAbsent && (!r.Found || string(cur) != string(op.Expected))) {
						return client.ErrConditionFailed
					}
					err = t.Put(ctx, op.Key, op.Value)
				}
			}
			if err != nil {
				return err
			}
			results = append(results, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// withClient runs fn with a client of --endpoint, bounded by --timeout.
func (g *globals) withClient(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	ctx, cancel := g.withTimeout(cmd.Context())
	defer cancel()
	c, err := g.client(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}
