package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentik/agentik/internal/agent"
)

// runAudit checks an export of the audit log offline (agentik audit
// verify FILE): no server, no key, only the file's own hash chain
// (agent.VerifyAudit). It fails naming the first entry that was altered,
// removed or moved.
func runAudit(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik audit", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: agentik audit verify FILE
  verify FILE   check an export of the audit log (GET /agentik/audit/export, JSON Lines; - for stdin):
                every entry's hash, its link to the one before, the order of seqs.
                Prints the count and the last hash (compare it with the server's newest entry).`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 2 || fs.Arg(0) != "verify" {
		fs.Usage()
		return errors.New("agentik audit: give verify FILE")
	}
	var in io.Reader = os.Stdin
	if name := fs.Arg(1); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("agentik audit verify: %w", err)
		}
		defer f.Close()
		in = f
	}
	rep, err := agent.VerifyAudit(in)
	if err != nil {
		return fmt.Errorf("agentik audit verify: %s: %w", fs.Arg(1), err)
	}
	fmt.Fprintf(stdout, "ok: %d entries, seq %d to %d, last hash %s\n", rep.Entries, rep.First, rep.Last, rep.Head)
	if rep.FirstPrev != "" {
		fmt.Fprintf(stdout, "the first entry follows hash %s (older entries were pruned, AGENTIK_AUDIT_TTL)\n", rep.FirstPrev)
	}
	return nil
}
