// Command testtime keeps the times of the real-cluster steps' `go test` runs and holds each
// top-level test to a budget (docs/development.md, Where the time goes):
//
//	go test -json ... | testtime record -o FILE [-v]
//	testtime check -budgets BUDGETS FILE...
//	testtime failures FILE...
//
// record keeps go test's JSON events in FILE and prints what go test prints without -json (with
// -v, every line, as go test -v prints them). check fails when a top-level test took longer than
// its budget, or when a FILE holds no test result at all. failures names the tests that failed
// and shows their last lines, for the tail of a long log.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testtime:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "record":
			return runRecord(args[1:], in, out)
		case "check":
			return runCheck(args[1:], out)
		case "failures":
			return runFailures(args[1:], out)
		}
	}
	return errors.New("usage: testtime record -o FILE [-v] < go-test-json, or testtime check -budgets BUDGETS FILE [FILE...], or testtime failures FILE [FILE...]")
}
