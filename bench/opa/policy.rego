# The Rego side of `make bench-opa` (bench/opa/run.sh): OPA answers the
# same Claude Code PreToolUse events as awaken-lua with the reference
# policy, testdata/agents/claude-code/policy/reference.lua. It denies
# Bash(rm *), asks for Bash(git push *) and answers {} otherwise, with the
# same replies and reasons (OPA wraps them in {"result": ...}).
#
# Rego has no shell parser, so this splits a command into simple commands
# with a regex on && || ; | and into words on white space. That is laxer
# than the Lua policy, which uses a real shell parser (awaken.shell.split:
# quotes, $(...), subshells, sudo and other wrappers, bash -c scripts) and
# denies what it cannot parse. OPA does less work per decision, so the
# comparison favours OPA.
#
# POST /v1/data/claude/decision {"input": <PreToolUse event>}
package claude

# The simple commands, trimmed, empty pieces dropped: each is [text, words].
cmds := [[t, regex.split(`\s+`, t)] |
	some piece in regex.split(`&&|\|\||;|\|`, object.get(input, ["tool_input", "command"], ""))
	t := trim_space(piece)
	t != ""
]

denied contains c[0] if {
	input.tool_name == "Bash"
	some c in cmds
	c[1][0] == "rm"
}

asked contains c[0] if {
	input.tool_name == "Bash"
	some c in cmds
	count(c[1]) >= 2
	c[1][0] == "git"
	c[1][1] == "push"
}

reply(d, reason) := {"hookSpecificOutput": {
	"hookEventName": "PreToolUse",
	"permissionDecision": d,
	"permissionDecisionReason": reason,
}}

default decision := {}

# deny wins over ask; with several matches, the first simple command in
# command order is reported (as the Lua loop does).
decision := reply("deny", sprintf("Bash(rm *) denies this command: %s", [first_denied])) if {
	count(denied) > 0
}

decision := reply("ask", sprintf("Bash(git push *) asks before this command: %s", [first_asked])) if {
	count(denied) == 0
	count(asked) > 0
}

first_denied := [c[0] | some c in cmds; c[0] in denied][0]

first_asked := [c[0] | some c in cmds; c[0] in asked][0]
