//go:build !linux

package redistest

import "os"

// goCommandOutput returns nil: only Linux exposes the parent's output.
func goCommandOutput() *os.File { return nil }
