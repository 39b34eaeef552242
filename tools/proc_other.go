//go:build !unix

package tools

import "os/exec"

// ownGroup has no process groups to use here: a cancel kills the command
// only (exec's default).
func ownGroup(*exec.Cmd) {}
