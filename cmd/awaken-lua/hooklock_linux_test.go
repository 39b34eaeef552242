package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process that holds the store's lock and does not let go (hung in a
// save, stopped by a debugger) costs hook --local its --timeout, never a
// hang past it: an agent whose hook times out lets the call run, where
// the hook's own deadline denies it (fail closed).
func TestHookLocalLockHolderHung(t *testing.T) {
	dir, _ := recordedEvents(t)
	work := localProject(t, filepath.Join(dir, "policy"))
	prompt, _ := os.ReadFile(filepath.Join(dir, "02.user_prompt_submit.json"))
	if out, errOut, code := runChild(t, work, nil, prompt, "hook", "--local"); code != 0 {
		t.Fatalf("prompt: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	// The hung holder: the whole of the store's lock file, as a process
	// opening the store holds it (an OFD lock: this process's other open
	// files, the child's, wait for it).
	f, err := os.OpenFile(filepath.Join(work, "state", ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), 0x26 /* F_OFD_SETLKW */, &lk); err != nil {
		t.Fatal(err)
	}
	event, _ := os.ReadFile(filepath.Join(dir, "09.pre_tool_use.bash_npm_test.json"))
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"hook", "--local", "--timeout", "1s"})
	cmd := exec.Command(exe, "-test.run=^$")
	var out, errOut bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = work, append(os.Environ(), childEnv+"="+string(args)), bytes.NewReader(event), &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("hook --local --timeout 1s still waited for the store's lock after 15s; stderr %s", errOut.String())
	}
	// Claude Code's fail-closed deny: exit 2, the reason on stderr.
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(errOut.String(), "denied (fail closed)") ||
		!strings.Contains(errOut.String(), "hook_timeout") {
		t.Fatalf("a PreToolUse past its deadline: exit %d, stdout %s, stderr %s; want a deny for the timeout", code, out.String(), errOut.String())
	}
}
