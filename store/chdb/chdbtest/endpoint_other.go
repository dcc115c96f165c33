//go:build !linux

package chdbtest

import "os/exec"

// dieWithParent relies on the closed standard input elsewhere: the endpoint exits
// when it reads end of file.
func dieWithParent(cmd *exec.Cmd) {}
