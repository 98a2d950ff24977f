package main

import "time"

// event is one line of `go test -json` (see `go doc test2json`), with the fields testtime reads.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// The actions that end a test, or a package when Test is empty.
const (
	actionRun  = "run"
	actionPass = "pass"
	actionFail = "fail"
	actionSkip = "skip"
)

func ends(action string) bool {
	return action == actionPass || action == actionFail || action == actionSkip
}
