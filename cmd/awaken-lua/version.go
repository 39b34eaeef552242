package main

import (
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func cmdVersion(e *env) int {
	args, err := parse(e.flags("version"), e.args)
	if err != nil {
		return exitUsage
	}
	if len(args) > 0 {
		fmt.Fprintf(e.stderr, "awaken-lua version: unexpected argument %q\n", args[0])
		return exitUsage
	}
	v := version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(e.stdout, "awaken-lua %s\n", v)
	return exitOK
}
