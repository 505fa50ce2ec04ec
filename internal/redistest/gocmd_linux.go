package redistest

import (
	"os"
	"path/filepath"
	"strconv"
)

// goCommandOutput opens the standard output of the go command that runs
// this test binary, or returns nil: when the parent is not "go", or its
// output is a regular file (a second writer there would overwrite, not
// interleave).
func goCommandOutput() *os.File {
	proc := "/proc/" + strconv.Itoa(os.Getppid())
	exe, err := os.Readlink(proc + "/exe")
	if err != nil || filepath.Base(exe) != "go" {
		return nil
	}
	fi, err := os.Stat(proc + "/fd/1")
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return nil
	}
	f, err := os.OpenFile(proc+"/fd/1", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return f
}
