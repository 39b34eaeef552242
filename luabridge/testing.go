package luabridge

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// TestFile is a *_test.lua file in a source.
type TestFile struct {
	Source Source
	Path   string // slash path inside the source
}

// Chunk is the name the file's errors show.
func (f TestFile) Chunk() string { return path.Join(f.Source.Name, f.Path) }

// FindTests lists the *_test.lua files of a source, recursively, sorted.
func FindTests(src Source) ([]TestFile, error) {
	if src.FS == nil {
		return nil, nil
	}
	var out []TestFile
	err := fs.WalkDir(src.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "types") {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, "_test.lua") {
			out = append(out, TestFile{Source: src, Path: p})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// TestOptions configure RunTests.
type TestOptions struct {
	Files []TestFile
	// Plugins and Stdlib are where harnesses find plugins by id, after the
	// test file's own directory.
	Plugins Source
	Stdlib  Source
	// Filter keeps tests whose "file name" matches (nil keeps all).
	Filter  *regexp.Regexp
	Verbose bool
	Out     io.Writer
	Limits  Limits
	// Timeout bounds one test (default 5s).
	Timeout time.Duration
	Log     *slog.Logger
}

// TestResult is the outcome of one test.
type TestResult struct {
	File     string
	Name     string
	Pos      errs.Pos
	Passed   bool
	Message  string // the failure, with its position
	Duration time.Duration
}

// TestSummary counts the results.
type TestSummary struct {
	Results        []TestResult
	Passed, Failed int
}

// RunTests runs Lua plugin tests and writes a report like `opa test`:
// failures (every test with Verbose), each with its file:line, then a rule
// and "N passed, N failed". A file that does not load counts as one failed
// test.
func RunTests(ctx context.Context, o TestOptions) TestSummary {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	// One read of each source for the whole run: every harness loads from
	// it, so a run of many tests does not read the plugin directory again
	// for each.
	lim := o.Limits.withDefaults()
	srcs := &sealedSources{lim: lim}
	var sealErr error
	if o.Plugins, sealErr = srcs.get(o.Plugins); sealErr == nil {
		o.Stdlib, sealErr = srcs.get(o.Stdlib)
	}
	var sum TestSummary
	for _, f := range o.Files {
		var results []TestResult
		if sealErr != nil {
			results = failedLoad(f, sealErr)
		} else {
			results = runTestFile(ctx, o, f, srcs)
		}
		for _, r := range results {
			sum.Results = append(sum.Results, r)
			if r.Passed {
				sum.Passed++
			} else {
				sum.Failed++
			}
			report(o, r)
		}
	}
	fmt.Fprintln(o.Out, strings.Repeat("-", 80))
	fmt.Fprintf(o.Out, "%d passed, %d failed\n", sum.Passed, sum.Failed)
	return sum
}

func report(o TestOptions, r TestResult) {
	where := r.Pos.String()
	if !r.Pos.IsValid() {
		where = r.File
	}
	d := fmt.Sprintf("%.1fms", float64(r.Duration.Microseconds())/1000)
	if !r.Passed {
		fmt.Fprintf(o.Out, "FAIL %s: %s (%s)\n", where, r.Name, d)
		for _, line := range strings.Split(r.Message, "\n") {
			fmt.Fprintf(o.Out, "  %s\n", line)
		}
	} else if o.Verbose {
		fmt.Fprintf(o.Out, "PASS %s: %s (%s)\n", where, r.Name, d)
	}
}

// testCase is one t.test registration.
type testCase struct {
	name string
	fn   *lua.LFunction
	pos  errs.Pos
}

// testRun is the state of one test file: its Lua state and its harnesses.
type testRun struct {
	o       TestOptions
	file    TestFile
	inst    *instance
	cases   []testCase
	harness []*harness // made by the running test: they end with it
	// fileHarness were made while the file loaded: every test may use
	// them, so they end with the file.
	fileHarness []*harness
	running     string // the running test's name
	gen         *Generation
	ctx         context.Context
	cctx        context.Context // the running test's: it ends with the test's budget
	dir         Source          // the test file's directory
	registry    bool            // t.test calls allowed (while the file loads)
	// raised holds the harness errors of the running test by the message
	// they were raised with (see raiseCode).
	raised map[string]*errs.Error
}

// sealedSources seals each source of a test run once.
type sealedSources struct {
	lim        Limits
	raw, seals []Source
}

func (s *sealedSources) get(src Source) (Source, error) {
	for i, r := range s.raw {
		if sameSource(r, src) || sameSource(s.seals[i], src) {
			return s.seals[i], nil
		}
	}
	sealed, err := seal(src, s.lim)
	if err != nil {
		return src, err
	}
	s.raw, s.seals = append(s.raw, src), append(s.seals, sealed)
	return sealed, nil
}

// failedLoad is the result of a test file that did not load.
func failedLoad(f TestFile, err error) []TestResult {
	e := luaError(err, errs.HookFailed)
	return []TestResult{{File: f.Chunk(), Name: "(load)", Pos: e.Pos, Message: e.Error()}}
}

func runTestFile(ctx context.Context, o TestOptions, f TestFile, srcs *sealedSources) []TestResult {
	fail := func(err error) []TestResult { return failedLoad(f, err) }
	src, err := fs.ReadFile(f.Source.FS, f.Path)
	if err != nil {
		return fail(err)
	}
	proto, err := compile(src, f.Chunk())
	if err != nil {
		return fail(err)
	}
	// The modules next to the test come from the sealed source too.
	root, err := srcs.get(f.Source)
	if err != nil {
		return fail(err)
	}
	dirFS, err := fs.Sub(root.FS, path.Dir(f.Path))
	if err != nil {
		return fail(err)
	}
	dir := Source{FS: dirFS, Name: path.Join(f.Source.Name, path.Dir(f.Path))}
	// A test that runs out of time stops the file's Lua state; the tests
	// after it run on the file loaded again in a new one.
	out, next := runTestsFrom(ctx, o, f, proto, dir, 0)
	for next >= 0 {
		var more []TestResult
		more, next = runTestsFrom(ctx, o, f, proto, dir, next)
		out = append(out, more...)
	}
	return out
}

// runTestsFrom loads the test file in a new Lua state and runs its tests
// from the start-th on. next is the index of the test after one that
// stopped the state, or -1 when every test ran.
func runTestsFrom(ctx context.Context, o TestOptions, f TestFile, proto *lua.FunctionProto, dir Source, start int) (out []TestResult, next int) {
	fail := func(err error) ([]TestResult, int) { return failedLoad(f, err), -1 }
	tr := &testRun{o: o, file: f, ctx: ctx, dir: dir}
	lim := o.Limits.withDefaults()
	tr.gen = &Generation{limits: lim, log: o.Log, sources: []Source{tr.dir, o.Plugins, o.Stdlib},
		protos: map[string]*lua.FunctionProto{}, preload: map[string]preloadFunc{
			"awaken.testing": func(L *lua.LState, _ *instance) lua.LValue { return tr.module(L) },
		}}
	p := &luaPlugin{gen: tr.gen, id: "test", file: f.Chunk(), root: tr.dir, timeout: o.Timeout, validateFn: -1, prepareFn: -1}
	inst := p.bareInstance()
	inst.testing = true
	L := inst.L
	abandoned := false
	defer func() {
		if !abandoned {
			L.Close()
		}
	}()
	tr.inst = inst
	defer func() {
		if !abandoned {
			tr.closeHarnesses()
			for _, h := range tr.fileHarness {
				h.close()
			}
		}
	}()

	fn := L.NewFunctionFromProto(proto)
	fn.Env = inst.newEnv()
	tr.registry = true
	L.Push(fn)
	var fired bool
	var err error
	tr.cctx = ctx
	fired, abandoned, err = inst.callBounded(ctx, lim.LoadTimeout, 0, 0)
	if fired {
		return fail(errs.New(errs.HookTimeout, "loading the test file took longer than %s", lim.LoadTimeout))
	}
	tr.registry = false
	if err != nil {
		out, next := fail(err)
		if e, ok := tr.raised[failureText(err)]; ok {
			out[0].Message = e.Error() // a harness made at the top of the file
			if !out[0].Pos.IsValid() {
				out[0].Pos = e.Pos
			}
		}
		return out, next
	}
	for i := start; i < len(tr.cases); i++ {
		c := tr.cases[i]
		if o.Filter != nil && !o.Filter.MatchString(f.Chunk()+" "+c.name) && !o.Filter.MatchString(c.name) {
			continue
		}
		r, ok := tr.runCase(c)
		out = append(out, r)
		if !ok {
			// The test did not come back; its state belongs to it now.
			abandoned = true
			return out, i + 1
		}
		if inst.dl.fired() {
			// The state timed out mid-test; the others cannot run on it.
			return out, i + 1
		}
	}
	return out, -1
}

// runCase runs one test under the test budget. Harnesses the test drives
// get a context that ends with the budget, and the test runs as a load
// does (callBounded): it reports false if the test did not come back, and
// then the state and its harnesses must be left alone.
func (tr *testRun) runCase(c testCase) (TestResult, bool) {
	L := tr.inst.L
	r := TestResult{File: tr.file.Chunk(), Name: c.name, Pos: c.pos}
	start := time.Now()
	cctx, cancel := context.WithCancel(tr.ctx)
	defer cancel()
	stop := context.AfterFunc(tr.inst.dl, cancel)
	defer stop()
	tr.cctx = cctx
	tr.raised = nil
	tr.running = c.name
	L.Push(c.fn)
	fired, abandoned, err := tr.inst.callBounded(cctx, tr.o.Timeout, 0, 0)
	r.Duration = time.Since(start)
	if abandoned {
		r.Message = fmt.Sprintf("%s: the test ran longer than %s and did not stop", c.pos, tr.o.Timeout)
		return r, false
	}
	tr.closeHarnesses()
	L.SetTop(0)
	switch {
	case fired:
		r.Message = fmt.Sprintf("%s: the test ran longer than %s", c.pos, tr.o.Timeout)
	case err != nil:
		r.Message = failureText(err)
		if e, ok := tr.raised[r.Message]; ok {
			r.Message = e.Error()
		}
		if api, ok := err.(*lua.ApiError); ok {
			if tb, ok := api.Object.(*lua.LTable); ok {
				// its contents: "table: 0x..." says nothing
				r.Message = fmt.Sprintf("%s: the test raised a table: %s", c.pos, render(tb, tr.inst.null))
			}
		}
	default:
		r.Passed = true
	}
	return r, true
}

// failureText renders a failed test's error with its position first.
func failureText(err error) string {
	if api, ok := err.(*lua.ApiError); ok && api.Object != nil {
		if u, ok := api.Object.(*lua.LUserData); ok {
			if re, ok := u.Value.(*raised); ok {
				return re.err.Error()
			}
		}
		return api.Object.String()
	}
	return err.Error()
}

func (tr *testRun) closeHarnesses() {
	for _, h := range tr.harness {
		h.close()
	}
	tr.harness = nil
}

// module is awaken.testing for one test file.
func (tr *testRun) module(L *lua.LState) lua.LValue {
	m := L.CreateTable(0, 10)
	fns := map[string]lua.LGFunction{
		"test":    tr.test,
		"harness": tr.newHarness,
		"eq":      tr.eq,
		"neq":     tr.neq,
		"ok":      tr.ok,
		"match":   tr.match,
		"raises":  tr.raises,
		"fail":    tr.failNow,
	}
	for name, fn := range fns {
		m.RawSetString(name, L.NewFunction(fn))
	}
	return newView(L, m, "awaken.testing")
}

// testingFuncs lists the functions of awaken.testing (for the stub test).
func testingFuncs() []string {
	return []string{"test", "harness", "eq", "neq", "ok", "match", "raises", "fail"}
}

func (tr *testRun) test(L *lua.LState) int {
	name := L.CheckString(1)
	fn := L.CheckFunction(2)
	if !tr.registry {
		L.RaiseError("t.test must be called when the test file loads, not from inside a test")
	}
	tr.cases = append(tr.cases, testCase{name: name, fn: fn, pos: parseWhere(L.Where(1))})
	return 0
}

func (tr *testRun) eq(L *lua.LState) int {
	got, want := L.Get(1), L.Get(2)
	if !luaEqual(L, got, want) {
		msg := "t.eq: expected " + render(want, tr.inst.null) + ", got " + render(got, tr.inst.null)
		if extra := L.OptString(3, ""); extra != "" {
			msg += " (" + extra + ")"
		}
		L.RaiseError("%s", msg)
	}
	return 0
}

func (tr *testRun) neq(L *lua.LState) int {
	if luaEqual(L, L.Get(1), L.Get(2)) {
		L.RaiseError("t.neq: both are %s", render(L.Get(1), tr.inst.null))
	}
	return 0
}

func (tr *testRun) ok(L *lua.LState) int {
	if !lua.LVAsBool(L.Get(1)) {
		L.RaiseError("t.ok: %s", L.OptString(2, "expected a true value, got "+render(L.Get(1), tr.inst.null)))
	}
	return 0
}

func (tr *testRun) failNow(L *lua.LState) int {
	L.RaiseError("t.fail: %s", L.OptString(1, "failed"))
	return 0
}

// find runs the sandbox's string.find, so t.match and t.raises use Lua
// patterns with the same limits as plugins.
func (tr *testRun) find(L *lua.LState, s, pattern string) bool {
	str := L.G.Global.RawGetString("string").(*lua.LTable)
	L.Push(str.RawGetString("find"))
	L.Push(lua.LString(s))
	L.Push(lua.LString(pattern))
	L.Call(2, 1)
	v := L.Get(-1)
	L.Pop(1)
	return v != lua.LNil
}

func (tr *testRun) match(L *lua.LState) int {
	s := L.CheckString(1)
	pattern := L.CheckString(2)
	if !tr.find(L, s, pattern) {
		L.RaiseError("t.match: %q does not match %q", s, pattern)
	}
	return 0
}

func (tr *testRun) raises(L *lua.LState) int {
	fn := L.CheckFunction(1)
	pattern := L.OptString(2, "")
	L.Push(fn)
	err := L.PCall(0, 0, nil)
	if err == nil {
		L.RaiseError("t.raises: the function returned without raising")
	}
	msg := failureText(err)
	if pattern != "" && !tr.find(L, msg, pattern) {
		L.RaiseError("t.raises: the error %q does not match %q", msg, pattern)
	}
	L.Push(lua.LString(msg))
	return 1
}

// luaEqual compares deeply: tables by their contents. Each pair of tables
// is compared once (a pair met again is taken as equal while its first
// comparison decides), so tables that share subtables, or contain
// themselves, compare in time proportional to the pairs they hold, not to
// the paths through them. With L set, the call's deadline is polled.
func luaEqual(L *lua.LState, a, b lua.LValue) bool {
	e := equality{L: L, seen: map[[2]*lua.LTable]struct{}{}}
	return e.equal(a, b, 0)
}

type equality struct {
	L     *lua.LState
	seen  map[[2]*lua.LTable]struct{}
	steps int
}

func (e *equality) equal(a, b lua.LValue, depth int) bool {
	if depth > 100 {
		return false
	}
	ta, okA := a.(*lua.LTable)
	tb, okB := b.(*lua.LTable)
	if !okA || !okB {
		if ua, ok := a.(*lua.LUserData); ok {
			if ub, ok := b.(*lua.LUserData); ok {
				if ka, ok := ua.Value.(*keyHandle); ok {
					if kb, ok := ub.Value.(*keyHandle); ok {
						return ka.name == kb.name
					}
				}
			}
		}
		return a == b
	}
	ta, tb = viewed(ta), viewed(tb)
	if ta == tb {
		return true
	}
	pair := [2]*lua.LTable{ta, tb}
	if _, ok := e.seen[pair]; ok {
		return true
	}
	e.seen[pair] = struct{}{}
	n := 0
	for k, v := ta.Next(lua.LNil); k != lua.LNil; k, v = ta.Next(k) {
		n++
		e.steps++
		if e.L != nil && e.steps%pollEvery == 0 {
			checkDone(e.L)
		}
		if !e.equal(v, tb.RawGet(k), depth+1) {
			return false
		}
	}
	m := 0
	for k, _ := tb.Next(lua.LNil); k != lua.LNil; k, _ = tb.Next(k) {
		m++
	}
	return n == m
}

// render shows a Lua value as readable JSON-like text for messages.
func render(v lua.LValue, null lua.LValue) string {
	switch x := v.(type) {
	case lua.LString:
		return fmt.Sprintf("%q", string(x))
	case *lua.LTable, *lua.LUserData:
		if v == null {
			return "awaken.null"
		}
		c := converter{null: null, maxEntries: 4096, maxBytes: 64 << 10}
		g, err := c.run(x)
		if err != nil {
			return x.String()
		}
		s := value.String(g)
		if len(s) > 2000 {
			s = s[:2000] + "..."
		}
		return s
	}
	return v.String()
}
