package run

import "testing"

// Every termination reads back as itself from its text form, and text
// that is not one is refused.
func TestTerminationText(t *testing.T) {
	for _, tc := range []struct {
		t    Termination
		text string
	}{
		{Termination{}, ""},
		{Termination{Kind: Natural}, "natural"},
		{Termination{Kind: Stopped, Detail: "deployed"}, "stopped:deployed"},
		{MaxSteps, "stopped:max_steps"},
		{Termination{Kind: Blocked, Detail: "rm: not here"}, "blocked:rm: not here"},
		{Termination{Kind: Suspended}, "suspended"},
		{Termination{Kind: Cancelled}, "cancelled"},
		{Termination{Kind: Errored, Detail: "hook_failed"}, "error:hook_failed"},
	} {
		if got := tc.t.String(); got != tc.text {
			t.Errorf("%+v.String() = %q, want %q", tc.t, got, tc.text)
		}
		if back, ok := ParseTermination(tc.text); !ok || back != tc.t {
			t.Errorf("ParseTermination(%q) = %+v, %v", tc.text, back, ok)
		}
	}
	for _, bad := range []string{"stopped", "natural:x", "done", "error"} {
		if _, ok := ParseTermination(bad); ok {
			t.Errorf("ParseTermination(%q) accepted", bad)
		}
	}
	if MaxSteps.PluginStopped() || !(Termination{Kind: Stopped, Detail: "x"}).PluginStopped() {
		t.Error("PluginStopped: the step limit is not a plugin's stop")
	}
}
