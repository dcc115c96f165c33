package simcli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit statuses: a run that failed, and input the driver cannot run with (the
// flag package exits with 2 on a flag it cannot parse).
const (
	ExitFailed = 1
	ExitUsage  = 2
)

// Cmd is a driver's name on its error lines, where they go and how it exits.
type Cmd struct {
	Name   string
	Stderr io.Writer      // nil: os.Stderr
	Exit   func(code int) // nil: os.Exit
}

// Fail prints "<name>: <err>" (once: an err that begins with "<name>: " is
// printed as it is) and exits with ExitFailed: the run failed.
func (c Cmd) Fail(err error) { c.exit(ExitFailed, err) }

// Usage prints "<name>: <err>" as Fail does and exits with ExitUsage: the flags parsed but
// do not go together or are out of range.
func (c Cmd) Usage(err error) { c.exit(ExitUsage, err) }

func (c Cmd) exit(code int, err error) {
	w, exit := c.Stderr, c.Exit
	if w == nil {
		w = os.Stderr
	}
	if exit == nil {
		exit = os.Exit
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, c.Name+": ") { // the library's own prefix is the driver's name
		msg = c.Name + ": " + msg
	}
	fmt.Fprintln(w, msg)
	exit(code)
}
