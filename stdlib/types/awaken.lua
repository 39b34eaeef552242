---@meta awaken
-- LuaLS definitions of the awaken module: completion, hover and diagnostics
-- for plugin authors. The .luarc.json that awaken-lua init writes (in this
-- repository: scripts/.luarc.json) points the language server here.
-- A Go test (luabridge/stub_test.go) checks this file against the module.

---@alias awaken.Phase
---| "run_start"
---| "step_start"
---| "before_inference"
---| "after_inference"
---| "before_tool_execute"
---| "after_tool_execute"
---| "step_end"
---| "run_end"

---@alias awaken.ActionPhase awaken.Phase

---@alias awaken.Scope "run"|"thread"
---@alias awaken.Merge "exclusive"|"commutative"
---@alias awaken.Reducer "replace"|"add"|"append"|"merge"|"union"|fun(value: any, update: any): any
---@alias awaken.Target "system"|"session"|"conversation"|"suffix_system"
---@alias awaken.MessageKind "ephemeral"|"persistent"|"throttled"
---@alias awaken.ResumeMode "replay"|"use_decision_as_result"|"pass_decision_to_tool"
---@alias awaken.Role "system"|"user"|"assistant"|"tool"

---A JSON Schema subset: type, properties, required, items, enum, minimum,
---maximum, minLength, maxLength, default, additionalProperties.
---@class awaken.Schema
---@field type? "string"|"number"|"integer"|"boolean"|"array"|"object"|"null"|string[]
---@field properties? table<string, awaken.Schema>
---@field required? string[]
---@field items? awaken.Schema
---@field enum? any[]
---@field minimum? number
---@field maximum? number
---@field minLength? integer
---@field maxLength? integer
---@field default? any
---@field additionalProperties? boolean|awaken.Schema
---@field description? string
---@field title? string kept for the JSON schema, never checked
---@field format? string kept for the JSON schema, never checked
---@field examples? any[] kept for the JSON schema, never checked

---@class awaken.PluginSpec
---@field id? string defaults to the file name
---@field description? string
---@field config? table<string, awaken.Schema>|awaken.Schema the schema of each config field, or a whole object schema (with type and properties)
---@field validate? fun(config: table): string|string[]|boolean|nil checks beyond the schema; return messages (false: "invalid config"; nil or true: valid)
---@field prepare? fun(config: table): any turns a config into what hooks read as ctx.prepared (parsed rules, indexes): run once per agent config and generation when the host configures the agent, with the load budget; return plain tables, strings, numbers and booleans
---@field hook_timeout? string|number the time budget of each call, e.g. "250ms" or 250 (milliseconds); default 100ms, at most 1h
---@field priority? integer hook order, 0 to 1000 (default 500, higher first); ties follow the agent's plugins list, then the plugin id

---@class awaken.KeySpec
---@field scope? awaken.Scope "run" (default: fresh every run) or "thread" (kept across runs)
---@field merge? awaken.Merge "exclusive" (default) or "commutative"
---@field schema? awaken.Schema
---@field default? any the value read while the key is absent
---@field reducer? awaken.Reducer how an update combines with the value (default "replace")
---@field persist? boolean false leaves the value out when state is saved

---@class awaken.Key
---@field name string

---@class awaken.ActionSpec
---@field phase awaken.ActionPhase the phase whose convergence loop runs the action
---@field schema? awaken.Schema of the payload

---@class awaken.ToolDef
---@field id string
---@field description? string
---@field parameters? awaken.Schema|table<string, awaken.Schema>
---@field execute fun(ctx: awaken.Context, args: table): awaken.Result|any

---@class awaken.Run
---@field id string
---@field thread_id string
---@field agent_id string
---@field step integer
---@field termination? string set once the run is ending (in run_end)
---@field cwd? string the agent's working directory: what the event that drives the run reported (a coding agent's hook event), or what a /v1/runs client or `awaken-lua eval --cwd` gave; nil otherwise

---@class awaken.ToolCallData
---@field id string
---@field name string
---@field args table

---@class awaken.Message
---@field role awaken.Role
---@field content string
---@field tool_calls? awaken.ToolCallData[]
---@field tool_call_id? string

---@class awaken.Usage
---@field prompt_tokens integer
---@field completion_tokens integer
---@field total_tokens integer

---@class awaken.Response
---@field text string
---@field tool_calls awaken.ToolCall[] read-only views, like the gate's call
---@field usage? awaken.Usage

---@class awaken.Resume
---@field action "resume"|"cancel"
---@field result? any
---@field reason? string

---A tool call: read-only; args, result and resume are plain tables.
---@class awaken.ToolCall
---@field id string
---@field name string
---@field args table
---@field result? awaken.Result set in after_tool_execute
---@field resume? awaken.Resume set when a suspended call is resumed
---@field decision? "allow"|"block"|"suspend"|"set_result" the gate's decision (tool phases after the gate)
---@field decided_by? string the plugin that decided ("runtime" for a tool not offered)
---@field reason? string the decision's reason
---@field rewritten_by? string the plugin whose rewrite gave the arguments

---@class awaken.Result
---@field status "success"|"error"|"pending"
---@field data? any
---@field message? string

---@class awaken.Ticket
---@field id? string
---@field action? string
---@field message? string
---@field parameters? any
---@field response_schema? awaken.Schema
---@field options? string[]
---@field resume_mode? awaken.ResumeMode
---@field timeout? string how long the call waits for a decision, e.g. "10m" or "24h" (at most 720h); default [runtime] ticket_timeout, or forever
---@field on_timeout? "cancel"|"resume" what the runtime decides once the timeout passes (default "cancel"); recorded as expired, not as a human's decision

---@class awaken.Decision
---@field decision "block"|"suspend"|"set_result"|"rewrite"
---@field reason? string
---@field args? table
---@field result? awaken.Result
---@field ticket? awaken.Ticket

---@class awaken.Params
---@field model? string
---@field temperature? number
---@field max_tokens? integer
---@field top_p? number
---@field reasoning_effort? string

---@class awaken.ToolSpec
---@field name string
---@field description? string
---@field parameters? awaken.Schema

---A tool of the step, as ctx.tools lists it (no parameters).
---@class awaken.StepTool
---@field name string
---@field description string

---@class awaken.Request
---@field messages awaken.Message[]
---@field tools awaken.ToolSpec[]
---@field params awaken.Params

---What a hook reads and writes. Reads see the frozen snapshot of the phase;
---writes are recorded into the hook's command and committed after it.
---@class awaken.Context
---@field phase awaken.Phase
---@field run awaken.Run
---@field config table this plugin's config for the running agent: read-only (a write, table.insert or table.remove on it raises), shared by the calls with the same config
---@field prepared any what the plugin's prepare returned for this config (nil without a prepare): read-only like config
---@field messages awaken.Message[]
---@field tool? awaken.ToolCall in tool phases
---@field response? awaken.Response in after_inference
---@field tools awaken.StepTool[] the step's tools: candidates in before_inference, then those offered to the model
---@field plugin string this plugin's id
local Context = {}

---Reads a key (a handle from p:key, or a name); an absent key reads as its default.
---@param key awaken.Key|string
---@return any value
---@nodiscard
function Context:get(key) end

---Records an update of a key, combined with its value by the key's reducer.
---@param key awaken.Key|string
---@param value any
function Context:update(key, value) end

---Schedules an action; it runs in the convergence loop of its declared phase.
---@param action string
---@param payload? any
function Context:schedule(action, payload) end

---Emits an effect; its handler runs after the commit, on the new state.
---@param effect string
---@param payload? any
function Context:emit(effect, payload) end

---Ends the run with termination "stopped:<code>".
---@param code string
---@param detail? string
function Context:stop(code, detail) end

---The host's time in seconds (hooks must not read the wall clock).
---@return number
---@nodiscard
function Context:now() end

---@class awaken.Plugin
---@field id string
local Plugin = {}

---Declares a state key and returns its handle.
---@param name string dotted, unique across plugins, e.g. "guard.calls"
---@param spec? awaken.KeySpec
---@return awaken.Key
function Plugin:key(name, spec) end

---Adds a hook for a phase (tool_gate has p:tool_gate).
---@param phase awaken.Phase
---@param fn fun(ctx: awaken.Context)
function Plugin:on(phase, fn) end

---Adds a gate hook: return nil to allow, or a decision. Gates are pure: no writes.
---@param fn fun(ctx: awaken.Context, call: awaken.ToolCall): awaken.Decision|nil
function Plugin:tool_gate(fn) end

---Declares an action and its handler.
---@param key string
---@param spec awaken.ActionSpec
---@param fn fun(ctx: awaken.Context, payload: any)
function Plugin:action(key, spec, fn) end

---Declares an effect handler (read-only).
---@param key string
---@param fn fun(ctx: awaken.Context, payload: any)
function Plugin:effect(key, fn) end

---Adds a tool the model can call.
---@param def awaken.ToolDef
function Plugin:tool(def) end

---Adds a request transform: it gets the request as left by the previous one,
---and a read-only ctx (config, get).
---@param fn fun(request: awaken.Request, ctx: awaken.Context): awaken.Request|nil
function Plugin:transform(fn) end

---Adds a result transform: it rewrites a tool result before the model sees it;
---ctx is read-only.
---@param fn fun(call: awaken.ToolCallData, result: awaken.Result, ctx: awaken.Context): awaken.Result|nil
function Plugin:result_transform(fn) end

---@class awaken.json
local json = {}

---Encodes a value as JSON (keys sorted, as encoding/json does). Fails with
---an error message when the value cannot be stored (a function, a cycle),
---holds more than 64 MiB of strings or 1,048,576 table entries, or when the
---result would pass 16 MiB.
---@param value any
---@return string|nil json
---@return string|nil err
function json.encode(value) end

---Decodes JSON: null is awaken.null in an array and absent in an object.
---Fails with an error message on invalid JSON, more than 1,048,576 values or
---nesting deeper than 512.
---@param s string
---@return any value
---@return string|nil err
function json.decode(s) end

---@class awaken.log
local log = {}

---@param msg string
---@param fields? table
function log.debug(msg, fields) end

---@param msg string
---@param fields? table
function log.info(msg, fields) end

---@param msg string
---@param fields? table
function log.warn(msg, fields) end

---@param msg string
---@param fields? table
function log.error(msg, fields) end

---Regular expressions in RE2 syntax (Go's regexp): matching takes time linear
---in the subject, whatever the pattern. Positions are 1-based byte offsets.
---A pattern longer than 64 KiB, one that does not compile, or one too large
---once its repetitions are expanded raises.
---@class awaken.regex
local regex = {}

---Finds the leftmost match of pattern in s from init (default 1; negative
---counts from the end), as if s started at init (^ matches there). Returns
---the start and end (inclusive) of the match, then the text of each group
---(nil for a group that took no part), or nil when nothing matches.
---@param pattern string
---@param s string
---@param init? integer
---@return integer|nil start
---@return integer|nil end
---@return string|nil ... the groups
---@nodiscard
function regex.find(pattern, s, init) end

---Like string.match: the text of each group of the leftmost match (nil for
---a group that took no part), or the whole match when the pattern has no
---groups; nil when nothing matches.
---@param pattern string
---@param s string
---@return string|nil ...
---@nodiscard
function regex.match(pattern, s) end

---One simple command of a shell command line (awaken.shell.split).
---@class awaken.ShellCommand
---@field argv string[] the words after quote removal; a word not known before the command runs (a "$VAR", a $(...), a glob) as written
---@field literal boolean[] for each word of argv, whether its value is known
---@field text string the command as written, leading assignments and redirections included
---@field line string the words on one line, quoted where the shell needs it (what permission rules match)
---@field dynamic boolean some word is not known before the command runs
---@field unknown boolean the command's name is not known before it runs ($CMD x, bash -c "$X"): judge it as any command
---@field via "top"|"wrapper"|"runner"|"script" found on the line itself; wrapped by a transparent wrapper (timeout, nice, nohup, exec...); run by sudo, env, xargs, find -exec, su -c or ssh; in the script of bash -c, eval or env -S
---@field parent integer|nil the index of the command it was found in (via ~= "top")
---@field env string[] the leading assignments (FOO=1), as written
---@field writes {value: string, source: string, literal: boolean}[] the targets of output redirections, the enclosing groups' included

---A shell command line split into its simple commands with a real shell
---parser (mvdan.cc/sh, bash): those after &&, ||, ;, |, &, inside $(...),
---backticks, <(...), subshells, groups, if/while/for/case bodies, the
---command a wrapper (sudo, env, timeout, xargs...) runs, and the script of
---bash -c, sh -c and eval.
---@class awaken.shell
local shell = {}

---Splits cmd into its simple commands, each wrapper before the command it
---wraps and each command before those of its substitutions. A command that
---does not parse, is over 64 KiB, nests too deep, or holds more than 4,096
---commands or 65,536 words gives nil and an error starting with
---"shell_unparsable": a policy must treat it as a command it cannot judge.
---The list and its commands are read-only (a write raises); a state gives
---the same value again for a command it split recently.
---@param cmd string
---@return awaken.ShellCommand[]|nil commands
---@return string|nil err
---@nodiscard
function shell.split(cmd) end

---Directories that anchor path rules, as Claude Code anchors them: ./x and
---bare names under cwd, /x under project_dir (each standing in for the
---other when only one is given; a deny or ask /x rule without project_dir
---is tried at cwd and each directory above it), ~/x under home_dir. Absolute paths;
---without them such rules cannot be judged (deny and ask rules match,
---allow rules do not).
---@class awaken.RuleDirs
---@field project_dir? string the project (Claude Code: the settings file's directory)
---@field home_dir? string
---@field cwd? string the agent's working directory (per call: ctx.run.cwd)

---A permissions block of Claude Code's settings.json, compiled.
---@class awaken.RulesSpec: awaken.RuleDirs
---@field allow? string[]
---@field ask? string[]
---@field deny? string[]

---A compiled permissions block (awaken.rules.compile): immutable, shared by
---every state; return it from prepare to compile it once per config.
---@class awaken.RulesPolicy
local Policy = {}

---Decides a call as Claude Code does: a matching deny rule denies, else an
---ask rule asks, else the call is allowed when allow rules cover it (for a
---shell command, every simple command; output redirections need an Edit
---rule). call is the gate's call or ctx.tool (its arguments are read in Go,
---not converted), or a tool name and its arguments. Returns the behavior,
---the deciding rule and a reason, or nil when no rule decides.
---@param call awaken.ToolCall|string
---@param args_or_dirs? table|awaken.Context the arguments after a name; else dirs
---@param dirs? awaken.RuleDirs|awaken.Context overrides the policy's; ctx: cwd is ctx.run.cwd (when absolute), read without building ctx.run
---@return "deny"|"ask"|"allow"|nil behavior
---@return string|nil rule
---@return string|nil reason
function Policy:decide(call, args_or_dirs, dirs) end

---Whether a deny rule without a specifier (Bash, mcp__server,
---mcp__server__*, *) covers every call of the tool.
---@param name string
---@return boolean
function Policy:denies_tool(name) end

---One compiled rule (awaken.rules.parse, awaken.rules.specifier).
---@class awaken.Rule
local Rule = {}

---Matches the rule as a rule of the behavior's list: for a shell command
---deny and ask rules match when any simple command does, allow rules when
---every one does, and a command that does not parse matches deny and ask
---and never allow. A specifier (awaken.rules.specifier) is matched against
---the primary argument of the call's tool, whatever tool the rule names;
---it gives nil for a tool that has none.
---@param behavior "allow"|"ask"|"deny"
---@param call awaken.ToolCall|string the gate's call or ctx.tool, or a tool name
---@param args_or_dirs? table|awaken.Context the arguments after a name; else dirs
---@param dirs? awaken.RuleDirs|awaken.Context as in Policy:decide
---@return boolean|nil
function Rule:match(behavior, call, args_or_dirs, dirs) end

---Claude Code's permission rules as its settings.json writes them:
---Bash(npm run test:*), Bash(git diff *), Read(./.env), Edit(src/**),
---WebFetch(domain:example.com), mcp__server, mcp__server__tool, Tool and
---Tool(x) on the tool's primary argument.
---@class awaken.rules
local rules = {}

---Compiles a permissions block (at most 4,096 rules). Invalid rules give
---nil, a message starting with "config_invalid" and the list of problems,
---each named by its list and 0-based index ("deny[2]: ..."). An unknown
---field raises.
---@param spec awaken.RulesSpec
---@return awaken.RulesPolicy|nil policy
---@return string|nil err
---@return string[]|nil problems
---@nodiscard
function rules.compile(spec) end

---Compiles one rule, or gives nil and a message.
---@param rule string
---@param dirs? awaken.RuleDirs
---@return awaken.Rule|nil
---@return string|nil err
---@nodiscard
function rules.parse(rule, dirs) end

---Compiles x as the specifier of a rule on whatever tool a call names:
---rule:match reads it against that tool's primary argument.
---@param x string
---@param dirs? awaken.RuleDirs
---@return awaken.Rule|nil
---@return string|nil err
---@nodiscard
function rules.specifier(x, dirs) end

---The input field that Tool(x) matches x against, and how: Bash command
---("command"), Read/Write/Edit/MultiEdit file_path ("path"), Glob/Grep
---pattern and WebSearch query and Task prompt ("text"), WebFetch url
---("url"), Codex's apply_patch command ("patch": the files it touches);
---nil for a tool the table does not know.
---@param name string
---@return string|nil field
---@return "command"|"path"|"url"|"text"|"patch"|nil kind
---@nodiscard
function rules.primary(name) end

---@class awaken
---@field null userdata a value that removes a field in a merge update
---@field json awaken.json
---@field log awaken.log
---@field regex awaken.regex
---@field shell awaken.shell
---@field rules awaken.rules
local awaken = {}

---Creates the plugin; the file must end with `return p`.
---@param spec? awaken.PluginSpec
---@return awaken.Plugin
function awaken.plugin(spec) end

---Blocks the call; the run ends "blocked:<reason>".
---@param reason string
---@return awaken.Decision
---@nodiscard
function awaken.block(reason) end

---Suspends the call for a human decision.
---@param ticket? awaken.Ticket
---@return awaken.Decision
---@nodiscard
function awaken.suspend(ticket) end

---Answers the call without running the tool.
---@param result awaken.Result|any
---@return awaken.Decision
---@nodiscard
function awaken.set_result(result) end

---Replaces the call's arguments; the gate then runs once more on them.
---@param args table
---@return awaken.Decision
---@nodiscard
function awaken.rewrite(args) end

---A success result.
---@param data? any
---@return awaken.Result
---@nodiscard
function awaken.success(data) end

---An error result the model sees.
---@param message string
---@return awaken.Result
---@nodiscard
function awaken.error(message) end

---A pending result: the tool asks for a decision; the call is suspended.
---@param ticket? awaken.Ticket
---@return awaken.Result
---@nodiscard
function awaken.pending(ticket) end

---Matches a glob: "*" (within a path segment when the pattern has "/"),
---"**" (across segments), "?", "[...]". Linear in s for a given pattern,
---and stopped by the hook budget; a pattern longer than 64 KiB raises.
---@param pattern string
---@param s string
---@return boolean
---@nodiscard
function awaken.glob(pattern, s) end

return awaken
