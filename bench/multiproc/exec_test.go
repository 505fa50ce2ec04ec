package multiproc

import (
	"os"
	"os/exec"
)

func execCommand(exe string, env ...string) *exec.Cmd {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
