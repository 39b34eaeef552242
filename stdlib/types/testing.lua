---@meta awaken.testing
-- LuaLS definitions of awaken.testing, the plugin test harness of
-- `awaken-lua test`. Checked against the module by luabridge/stub_test.go.

---@class awaken.testing.HarnessSpec
---@field plugins? string[] plugin ids: the test file's directory, then the plugin directory, then stdlib/
---@field config? table<string, table> config keyed by plugin id
---@field agent? awaken.testing.AgentSpec
---@field now? number the clock's start, in seconds (it advances a second per read)

---@class awaken.testing.AgentSpec
---@field id? string
---@field system_prompt? string
---@field max_steps? integer
---@field max_continues? integer runtime.continue per run (default 3; 0: none)
---@field max_phase_rounds? integer
---@field plugins? string[] the activation filter (default: every loaded plugin)

---@class awaken.testing.CallOpts
---@field state? table<string, any> key values to seed before the call
---@field thread? string the thread (default "main"); thread state carries over between calls
---@field step? integer the run's step number (default 1)
---@field cwd? string the agent's working directory, which hooks read as ctx.run.cwd (default: none)

---@class awaken.testing.GateResult
---@field decision "allow"|"block"|"suspend"|"set_result"
---@field args table the call's arguments after any rewrite
---@field reason? string
---@field ticket? awaken.Ticket
---@field result? awaken.Result
---@field rewritten_by? string the plugin whose rewrite gave args (decision is then "allow")

---@class awaken.testing.PhaseInput
---@field tool? {id?: string, name: string, args?: table, result?: awaken.Result, resume?: awaken.Resume, decision?: string, decided_by?: string, reason?: string, rewritten_by?: string}
---@field response? awaken.Response
---@field messages? awaken.Message[]
---@field tools? {name: string, description?: string}[] what ctx.tools shows

---@class awaken.testing.PhaseResult
---@field state table<string, any> every plugin key with a value after the phase
---@field effects {key: string, payload: any}[] in dispatch order
---@field pending_actions {key: string, phase: string, payload: any}[]
---@field failed_actions {key: string, payload: any, error: string}[]
---@field revision integer

---@class awaken.testing.Turn
---@field text? string
---@field tool_calls? {id?: string, name: string, args?: table}[]
---@field usage? awaken.Usage

---What a test tool's function gets after its arguments.
---@class awaken.testing.ToolCtx
---@field id? string the call's id
---@field name string the tool's name
---@field step integer
---@field thread_id string

---@class awaken.testing.RunSpec
---@field prompt? string
---@field turns awaken.testing.Turn[] the scripted model's answers
---@field tools? table<string, fun(args: table, ctx: awaken.testing.ToolCtx): awaken.Result|any> tools offered to the model
---@field thread? string
---@field messages? awaken.Message[]

---@class awaken.testing.ResumeSpec
---@field thread? string
---@field decisions {target: string, action: "resume"|"cancel", result?: any, reason?: string}[]
---@field turns awaken.testing.Turn[]
---@field tools? table<string, fun(args: table, ctx: awaken.testing.ToolCtx): awaken.Result|any>
---@field after? string the decisions come this long after the run suspended, e.g. "2h": tickets whose timeout passed meanwhile expire first

---@class awaken.testing.RunResult
---@field termination string natural, stopped:<code>, blocked:<reason>, suspended, cancelled or error:<code>
---@field state table<string, any>
---@field events table[] the run's events, each with its name under "event"
---@field messages awaken.Message[]
---@field requests {messages: awaken.Message[], tools: string[], params: awaken.Params}[]
---@field steps integer
---@field suspended awaken.Ticket[]
---@field expired string[] the ids of the calls whose tickets expired (the runtime decided)
---@field run_id string
---@field thread string the thread's id
---@field effects {key: string, payload: any}[] in dispatch order
---@field error? string

---@class awaken.testing.Harness
local Harness = {}

---Evaluates the gate for one call.
---@param call {id?: string, name: string, args?: table, resume?: awaken.Resume}
---@param opts? awaken.testing.CallOpts
---@return awaken.testing.GateResult
function Harness:gate(call, opts) end

---Runs one phase as a run reaches it: a run on the thread, restored at the
---stage before the phase with opts.state seeded; the thread keeps the run's
---thread values afterwards. A tool phase's call has passed the gate with
---input.tool's decision (else the seeded __runtime.tool_calls record's, else
---allow).
---@param name awaken.Phase
---@param input? awaken.testing.PhaseInput
---@param opts? awaken.testing.CallOpts
---@return awaken.testing.PhaseResult
function Harness:phase(name, input, opts) end

---Runs a whole run on the scripted model.
---@param spec awaken.testing.RunSpec
---@return awaken.testing.RunResult
function Harness:run(spec) end

---Continues a waiting thread with decisions.
---@param spec awaken.testing.ResumeSpec
---@return awaken.testing.RunResult
function Harness:resume(spec) end

---@class awaken.testing
local testing = {}

---Registers a test.
---@param name string
---@param fn fun()
function testing.test(name, fn) end

---Loads plugins into a real engine with a memory store.
---@param spec? awaken.testing.HarnessSpec
---@return awaken.testing.Harness
function testing.harness(spec) end

---Fails unless got and want are deeply equal.
---@param got any
---@param want any
---@param msg? string
function testing.eq(got, want, msg) end

---Fails if a and b are deeply equal.
---@param a any
---@param b any
function testing.neq(a, b) end

---Fails unless v is true (not nil or false).
---@param v any
---@param msg? string
function testing.ok(v, msg) end

---Fails unless s matches the Lua pattern.
---@param s string
---@param pattern string
function testing.match(s, pattern) end

---Fails unless fn raises an error whose message matches the Lua pattern; returns the message.
---@param fn fun()
---@param pattern? string
---@return string message
function testing.raises(fn, pattern) end

---Fails now.
---@param msg? string
function testing.fail(msg) end

return testing
