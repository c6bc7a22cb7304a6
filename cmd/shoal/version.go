package main

import (
	"fmt"

	"github.com/shoal-project/shoal/buildinfo"
	"github.com/spf13/cobra"
)

// version is what `shoal version` and `shoal --version` print.
func version() string { return buildinfo.Read().String() }

func (cl *cli) version() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version, VCS revision, dirty flag and Go version",
		Long: `Print the module version, the VCS revision the binary was built from, whether the
work tree was modified, and the Go version, as the Go toolchain stamped them.
'go run' and 'go test' stamp no revision ("unknown"); build with 'go build' in a
clone for one. The proxy reports the same as the shoal_build_info gauge.`,
		Example: "  shoal version\n  shoal --version",
		Args:    cobra.NoArgs,
		RunE: cl.action(func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(cl.stdout, version())
			return err
		}),
	}
}
