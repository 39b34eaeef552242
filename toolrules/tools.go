package toolrules

// Kind says how a rule's specifier matches a tool's primary argument.
type Kind uint8

const (
	// Text: a glob on the value, where * matches any run of characters.
	Text Kind = iota
	// Command: a shell command, split into its simple commands (package
	// shell); the specifier is a glob on each, Claude Code's Bash syntax.
	Command
	// Path: a file path, matched gitignore-style against the specifier.
	Path
	// URL: a URL; domain:HOST matches its host, anything else is a glob on
	// the whole URL.
	URL
	// Patch: an apply_patch patch, judged by the files it adds, updates,
	// deletes and moves to, each as a Path: a deny or ask rule matches
	// when any of them matches, an allow rule when every one does.
	Patch
)

func (k Kind) String() string {
	switch k {
	case Text:
		return "text"
	case Command:
		return "command"
	case Path:
		return "path"
	case URL:
		return "url"
	case Patch:
		return "patch"
	}
	return "kind?"
}

// Tool says how rules see one tool of one agent.
type Tool struct {
	// Name is the tool's name as the agent reports it.
	Name string
	// Arg is the field of the tool input that Name(x) matches x against.
	Arg string
	// Kind is how x matches Arg.
	Kind Kind
	// Family is another rule name whose rules cover this tool as well,
	// matched against FamilyArg (Arg when empty) the way that rule's own
	// tool is: Edit rules cover Write, Bash rules cover Gemini CLI's
	// run_shell_command, Read rules cover Grep's path.
	Family, FamilyArg string
	// FamilyDefault is the value of FamilyArg when the input lacks it
	// ("." for Grep's and Glob's path: the project directory).
	FamilyDefault string
	// DenyFamily is a rule name whose deny and ask rules with a specifier
	// also cover this tool, on Arg: a Read deny rule blocks Edit and Write
	// on the same path.
	DenyFamily string
	// AllowFamily is a rule name whose allow rules with a specifier also
	// cover this tool, on Arg: an Edit allow rule grants Read on the path.
	AllowFamily string
	// Params are the input fields, other than Arg, that deny and ask rules
	// may name as Tool(param:value).
	Params []string
	// Dirs are the input fields that name the directory a shell command
	// runs in (Codex's workdir, Gemini CLI's dir_path), the first one
	// present: its relative write targets are that directory's, and it is
	// itself relative to the working directory.
	Dirs []string
}

// Tools maps a tool name to how rules see it.
type Tools map[string]Tool

// The tools of the agents whose argument names were checked against their
// sources (see README.md in this directory): Claude Code's built-in tools,
// OpenAI Codex's shell and patch tools and Gemini CLI's built-in tools. Never
// written after initialization; DefaultTools hands out copies.
var defaultTools = table(
	// Claude Code (hooks reference and permissions docs).
	// Codex's and Gemini CLI's shell calls reach rules as Bash, with their
	// own directory fields (Claude Code's Bash has none).
	Tool{Name: "Bash", Kind: Command, Arg: "command", Params: []string{"description", "timeout", "run_in_background"},
		Dirs: []string{"workdir", "dir_path", "directory"}},
	Tool{Name: "Read", Kind: Path, Arg: "file_path", AllowFamily: "Edit"},
	Tool{Name: "Write", Kind: Path, Arg: "file_path", Family: "Edit", DenyFamily: "Read"},
	Tool{Name: "Edit", Kind: Path, Arg: "file_path", DenyFamily: "Read"},
	Tool{Name: "MultiEdit", Kind: Path, Arg: "file_path", Family: "Edit", DenyFamily: "Read"},
	Tool{Name: "NotebookEdit", Kind: Path, Arg: "notebook_path", Family: "Edit"},
	Tool{Name: "Glob", Kind: Text, Arg: "pattern", Family: "Read", FamilyArg: "path", FamilyDefault: "."},
	Tool{Name: "Grep", Kind: Text, Arg: "pattern", Family: "Read", FamilyArg: "path", FamilyDefault: "."},
	Tool{Name: "WebFetch", Kind: URL, Arg: "url"},
	Tool{Name: "WebSearch", Kind: Text, Arg: "query"},
	Tool{Name: "Agent", Kind: Text, Arg: "subagent_type", Params: []string{"model", "isolation"}},
	Tool{Name: "Task", Kind: Text, Arg: "prompt"},
	// OpenAI Codex (codex-rs/core/src/tools/handlers/shell_spec.rs).
	Tool{Name: "exec_command", Kind: Command, Arg: "cmd", Family: "Bash", Dirs: []string{"workdir"}},
	Tool{Name: "shell_command", Kind: Command, Arg: "command", Family: "Bash", Dirs: []string{"workdir"}},
	// Codex's file edits (its hooks' apply_patch: the patch in command).
	Tool{Name: "apply_patch", Kind: Patch, Arg: "command", Family: "Edit", DenyFamily: "Read"},
	// Gemini CLI (packages/core/src/tools/definitions/base-declarations.ts).
	Tool{Name: "run_shell_command", Kind: Command, Arg: "command", Family: "Bash", Dirs: []string{"dir_path", "directory"}},
	Tool{Name: "read_file", Kind: Path, Arg: "file_path", Family: "Read"},
	Tool{Name: "write_file", Kind: Path, Arg: "file_path", Family: "Edit", DenyFamily: "Read"},
	Tool{Name: "replace", Kind: Path, Arg: "file_path", Family: "Edit", DenyFamily: "Read"},
	Tool{Name: "glob", Kind: Text, Arg: "pattern"},
	Tool{Name: "grep_search", Kind: Text, Arg: "pattern"},
	Tool{Name: "google_web_search", Kind: Text, Arg: "query"},
)

// table indexes tools by name.
func table(ts ...Tool) Tools {
	out := make(Tools, len(ts))
	for _, t := range ts {
		out[t.Name] = t
	}
	return out
}

// Lookup returns the built-in table's entry for a tool.
func Lookup(name string) (Tool, bool) {
	t, ok := defaultTools[name]
	return t, ok
}

// DefaultTools returns a copy of the built-in table, to extend with other
// agents' tools.
func DefaultTools() Tools {
	out := make(Tools, len(defaultTools))
	for k, v := range defaultTools {
		out[k] = v
	}
	return out
}
