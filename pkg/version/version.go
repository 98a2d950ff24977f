// Package version holds the build information that the Makefile and
// goreleaser inject with -ldflags "-X ...". It is the one version source for
// both binaries.
package version

import (
	"fmt"
	"runtime"
)

// These are set at link time; the defaults mark an uninjected build.
var (
	Version = "v0.0.0-dev"
	Commit  = "unknown"
	Date    = "unknown"
)

// Info is the build information printed by the version commands.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build information of the running binary.
func Get() Info {
	return Info{
		Version:   Version,
		Commit:    Commit,
		Date:      Date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String renders the information on one line.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s, %s)", i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}

// UserAgent is the User-Agent a binary sends to the API server: "<binary>/<version>".
func UserAgent(binary string) string {
	return binary + "/" + Version
}
