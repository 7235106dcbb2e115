// Package migrate implements `policing migrate`: versioned CQL schema migrations.
package migrate

import (
	"context"
	"fmt"
	"io"
)

// Main runs the migrate subcommand with its arguments and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "policing migrate: not available in this build yet")
	return 2
}
