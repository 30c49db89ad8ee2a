package main

import (
	"runtime/debug"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// buildInfo is what `dont version` reports: the module version, the VCS
// revision and build date the go tool stamped, and the Go version.
type buildInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	BuildDate string `json:"build_date,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
}

// readBuildInfo reads the binary's build info; without it, or with a
// development module version, the version is envelope.CLIVersion.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: envelope.CLIVersion}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	b.GoVersion = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.BuildDate = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// printVersion is `dont version` and `dont --version`.
func (a *app) printVersion() {
	a.emit(tools.Output{Kind: envelope.KindVersion, Data: readBuildInfo()})
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and build date (the JSON envelope with --json).",
		Args:  a.argCount(0),
		RunE: func(*cobra.Command, []string) error {
			a.printVersion()
			return nil
		},
	}
}
