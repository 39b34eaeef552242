package luabridge

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// concatName is the function every ".." of a plugin calls instead of the
// VM's own concatenation. The name is not a valid Lua identifier, so a
// plugin cannot shadow it with a local.
const concatName = "awaken concat"

// rewriteConcat replaces each chain a .. b .. c with concatName(a, b, c):
// the VM's concatenation cannot be bounded or interrupted, and a string
// doubled thirty times is a gigabyte before any deadline is looked at.
// Chains of constants are left alone (their size is the source's).
//
// It also refuses a chunk whose arithmetic would take gopher-lua too long
// to compile (see foldWork).
func rewriteConcat(chunk []ast.Stmt, name string) ([]ast.Stmt, error) {
	r := rewriter{}
	r.block(chunk)
	if r.deepLine > 0 {
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: name, Line: r.deepLine},
			Msg: fmt.Sprintf("this code nests more than %d levels deep, too deep to compile: split it with local variables or functions", maxNesting)}
	}
	if r.scopeLine > 0 {
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: name, Line: r.scopeLine},
			Msg: "the blocks and functions of this file nest too deep to compile in reasonable time " +
				"(each name is looked up through every block around it, and each block's end walks them): flatten the nesting here"}
	}
	if r.foldWork > maxFoldWork {
		msg := fmt.Sprintf("this expression has %d arithmetic operators, too many to compile in reasonable time "+
			"(the time grows with the square of the operators in one expression): split it with local variables", r.worstSize)
		if r.worstWork <= maxFoldWork/2 {
			msg = fmt.Sprintf("the arithmetic expressions of this file would take too long to compile (the longest, here, has %d operators, "+
				"and the time grows with the square of the operators in one expression): split them with local variables", r.worstSize)
		}
		return nil, &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: name, Line: r.worstLine}, Msg: msg}
	}
	// Bind each function once as a local of the chunk: every use is then an
	// upvalue read, not a global lookup.
	var names []string
	if r.changed {
		names = append(names, concatName)
	}
	if r.indexed {
		names = append(names, setIndexName, tableName)
	}
	if len(names) == 0 {
		return chunk, nil
	}
	exprs := make([]ast.Expr, len(names))
	for i, n := range names {
		exprs[i] = &ast.IdentExpr{Value: n}
	}
	local := &ast.LocalAssignStmt{Names: names, Exprs: exprs}
	return append([]ast.Stmt{local}, chunk...), nil
}

// maxFoldWork bounds the steps gopher-lua's constant folding may take to
// compile one chunk: about half a second. Compiling an arithmetic operator
// folds the whole arithmetic expression below it again, so a chain of n
// operators costs n*n/2 steps (y + y + ... with 300,000 terms: half an
// hour); the compiler cannot be interrupted, so such a chunk is refused
// before it is compiled. Ordinary arithmetic costs steps in proportion to
// its size, so a large file of it (a generated table near the 2 MiB a
// file may have) loads; one expression may have about 8,000 operators.
const maxFoldWork = 1 << 25

// maxNesting bounds how deep blocks and expressions nest. gopher-lua
// compiles them by recursion, a kilobyte of stack or so a level, and a
// goroutine whose stack passes its limit (a million nested tables in a
// 2 MiB file) is a fatal error, not a panic: the process ends.
const maxNesting = 1 << 14

// maxScopeWork bounds the steps gopher-lua's compiler takes to resolve
// names and close blocks: about half a second. Each name is looked up
// through every enclosing block and the locals declared there, up through
// the enclosing functions, and each block's end counts the locals around
// it, so deep nesting costs the depth times what it holds (250,000 nested
// do blocks: minutes). Like the arithmetic, it is counted before compiling.
const maxScopeWork = 1 << 25

type rewriter struct {
	changed, indexed bool
	// foldWork is what compiling the chunk's arithmetic will cost, in
	// nodes constant folding visits; worstLine and worstSize are the line
	// and the operators of the expression that costs the most.
	foldWork, worstWork, worstLine, worstSize int
	// depth is the nesting where the walk is, and deepLine the line where
	// it first passed maxNesting (0 while it has not). scope is what
	// looking up a name costs there (the enclosing blocks and their
	// locals), scopeWork the sum of such costs so far, and scopeLine the
	// line where that passed maxScopeWork.
	depth, deepLine             int
	scope, scopeWork, scopeLine int
}

// enter counts one level of nesting at line; it reports false, and the
// walk goes no deeper, past maxNesting.
func (r *rewriter) enter(line int) bool {
	r.depth++
	if r.depth > maxNesting {
		if r.deepLine == 0 {
			r.deepLine = max(line, 1)
		}
		return false
	}
	return true
}

// resolve counts the compiler's work for a name, or a block's end, at line.
func (r *rewriter) resolve(line int) {
	r.scopeWork += r.scope
	if r.scopeWork > maxScopeWork && r.scopeLine == 0 {
		r.scopeLine = max(line, 1)
	}
}

// block walks the statements of a block that declares locals (a
// function's parameters, a loop's variables) before them.
func (r *rewriter) block(ss []ast.Stmt, locals ...string) {
	saved := r.scope
	r.scope += 1 + len(locals)
	r.stmts(ss)
	line := 0
	if len(ss) > 0 {
		line = ss[len(ss)-1].LastLine()
	}
	r.resolve(line)
	r.scope = saved
}

// foldCost is what constant folding costs for an expression: size is
// the operators one folding of it visits (its arithmetic below the first
// operand that is not arithmetic), work the visits compiling it takes in
// all, constant whether it folds into a number.
type foldCost struct {
	size, work int
	constant   bool
}

// arith rewrites an operand of an arithmetic operator and says what it
// costs to fold; any other expression starts a count of its own.
func (r *rewriter) arith(e ast.Expr) (ast.Expr, foldCost) {
	switch x := e.(type) {
	case *ast.NumberExpr:
		return e, foldCost{constant: true}
	case *ast.ArithmeticOpExpr:
		var lhs, rhs foldCost
		x.Lhs, lhs = r.arith(x.Lhs)
		x.Rhs, rhs = r.arith(x.Rhs)
		return e, fold(1+lhs.size+rhs.size, lhs.constant && rhs.constant, lhs.work+rhs.work)
	case *ast.UnaryMinusOpExpr:
		var c foldCost
		x.Expr, c = r.arith(x.Expr)
		return e, fold(1+c.size, c.constant, c.work)
	}
	return r.expr(e), foldCost{}
}

// fold is the cost of an operator whose operands are size operators and
// cost below: a constant folds in one walk, and the operands of anything
// else are compiled, each folded again.
func fold(size int, constant bool, below int) foldCost {
	if constant {
		return foldCost{size: size, work: size, constant: true}
	}
	return foldCost{size: size, work: size + below}
}

// count adds the cost of an arithmetic expression compiled on its own.
func (r *rewriter) count(e ast.Expr, c foldCost) {
	r.foldWork += c.work
	if c.work > r.worstWork {
		r.worstWork, r.worstLine, r.worstSize = c.work, e.Line(), c.size
	}
}

func (r *rewriter) stmts(ss []ast.Stmt) {
	for i, s := range ss {
		r.stmt(s)
		a, ok := s.(*ast.AssignStmt)
		switch {
		case ok && len(a.Lhs) > 1:
			block := multipleAssign(a)
			for j, one := range block.Stmts {
				block.Stmts[j] = r.guardIndex(one)
			}
			ss[i] = block
		case ok:
			ss[i] = r.guardIndex(a)
		}
	}
}

// multipleAssign rewrites a, b = x, y into
//
//	do local t1, t2 = x, y; a = t1; b = t2 end
//
// gopher-lua v1.1.2 compiles a, b = b, a for locals into a = b; b = a (both
// end up equal); through temporaries every right-hand side is evaluated
// before any assignment, as Lua requires. The temporaries' names are not
// valid identifiers, so no plugin variable can clash with them.
func multipleAssign(a *ast.AssignStmt) *ast.DoBlockStmt {
	names := make([]string, len(a.Lhs))
	for i := range names {
		names[i] = "awaken tmp " + itoa(i)
	}
	local := &ast.LocalAssignStmt{Names: names, Exprs: a.Rhs}
	local.SetLine(a.Line())
	local.SetLastLine(a.LastLine())
	body := []ast.Stmt{local}
	for i, lhs := range a.Lhs {
		tmp := &ast.IdentExpr{Value: names[i]}
		tmp.SetLine(a.Line())
		one := &ast.AssignStmt{Lhs: []ast.Expr{lhs}, Rhs: []ast.Expr{tmp}}
		one.SetLine(a.Line())
		one.SetLastLine(a.LastLine())
		body = append(body, one)
	}
	block := &ast.DoBlockStmt{Stmts: body}
	block.SetLine(a.Line())
	block.SetLastLine(a.LastLine())
	return block
}

func (r *rewriter) stmt(s ast.Stmt) {
	defer func() { r.depth-- }()
	if !r.enter(s.Line()) {
		return
	}
	switch x := s.(type) {
	case *ast.AssignStmt:
		r.exprs(x.Lhs)
		r.exprs(x.Rhs)
	case *ast.LocalAssignStmt:
		r.exprs(x.Exprs)
		r.scope += len(x.Names)
	case *ast.FuncCallStmt:
		x.Expr = r.expr(x.Expr)
	case *ast.DoBlockStmt:
		r.block(x.Stmts)
	case *ast.WhileStmt:
		x.Condition = r.expr(x.Condition)
		r.block(x.Stmts)
	case *ast.RepeatStmt:
		x.Condition = r.expr(x.Condition)
		r.block(x.Stmts)
	case *ast.IfStmt:
		x.Condition = r.expr(x.Condition)
		r.block(x.Then)
		r.block(x.Else)
	case *ast.NumberForStmt:
		x.Init = r.expr(x.Init)
		x.Limit = r.expr(x.Limit)
		if x.Step != nil {
			x.Step = r.expr(x.Step)
		}
		r.block(x.Stmts, x.Name, "(for index)", "(for limit)", "(for step)")
	case *ast.GenericForStmt:
		r.exprs(x.Exprs)
		r.block(x.Stmts, append(x.Names, "(for generator)", "(for state)", "(for control)")...)
	case *ast.FuncDefStmt:
		if x.Name != nil {
			x.Name.Func = r.expr(x.Name.Func)
			if x.Name.Receiver != nil {
				x.Name.Receiver = r.expr(x.Name.Receiver)
			}
		}
		r.function(x.Func)
	case *ast.ReturnStmt:
		r.exprs(x.Exprs)
	}
}

// function walks a function's body, its parameters declared in it.
func (r *rewriter) function(f *ast.FunctionExpr) {
	var params []string
	if f.ParList != nil {
		params = f.ParList.Names
		if f.ParList.HasVargs {
			params = append(params, "arg")
		}
	}
	r.block(f.Stmts, params...)
}

func (r *rewriter) exprs(es []ast.Expr) {
	for i, e := range es {
		es[i] = r.expr(e)
	}
}

func (r *rewriter) expr(e ast.Expr) ast.Expr {
	if e == nil {
		return nil
	}
	defer func() { r.depth-- }()
	if !r.enter(e.Line()) {
		return e
	}
	switch x := e.(type) {
	case *ast.IdentExpr:
		r.resolve(x.Line())
	case *ast.StringConcatOpExpr:
		var parts []ast.Expr
		var flatten func(e ast.Expr)
		flatten = func(e ast.Expr) {
			if c, ok := e.(*ast.StringConcatOpExpr); ok {
				flatten(c.Lhs)
				flatten(c.Rhs)
				return
			}
			parts = append(parts, r.expr(e))
		}
		flatten(x)
		constant := true
		for _, p := range parts {
			switch p.(type) {
			case *ast.StringExpr, *ast.NumberExpr:
			default:
				constant = false
			}
		}
		if constant {
			return x
		}
		r.changed = true
		call := &ast.FuncCallExpr{Func: &ast.IdentExpr{Value: concatName}, Args: parts}
		call.SetLine(x.Line())
		call.SetLastLine(x.LastLine())
		call.Func.SetLine(x.Line())
		return call
	case *ast.AttrGetExpr:
		x.Object = r.expr(x.Object)
		x.Key = r.expr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			if f.Key != nil {
				f.Key = r.expr(f.Key)
			}
			f.Value = r.expr(f.Value)
		}
		return r.guardTable(x)
	case *ast.FuncCallExpr:
		if x.Func != nil {
			x.Func = r.expr(x.Func)
		}
		if x.Receiver != nil {
			x.Receiver = r.expr(x.Receiver)
		}
		r.exprs(x.Args)
	case *ast.LogicalOpExpr:
		x.Lhs = r.expr(x.Lhs)
		x.Rhs = r.expr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs = r.expr(x.Lhs)
		x.Rhs = r.expr(x.Rhs)
	case *ast.ArithmeticOpExpr, *ast.UnaryMinusOpExpr:
		e, c := r.arith(e)
		r.count(e, c)
		return e
	case *ast.UnaryNotOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.FunctionExpr:
		r.function(x)
	}
	return e
}

// concat implements "..": strings and numbers join when the result stays
// under the limit; other operands go through __concat, pairwise from the
// right, as the VM does.
func concat(max int) lua.LGFunction {
	return func(L *lua.LState) int {
		n := L.GetTop()
		total := 0
		simple := true
		for i := 1; i <= n; i++ {
			v := L.Get(i)
			if !lua.LVCanConvToString(v) {
				simple = false
				break
			}
			total += len(lua.LVAsString(v))
			if total > max {
				L.RaiseError("string concatenation: the result would be over the limit of %d bytes", max)
			}
		}
		if simple {
			var b strings.Builder
			b.Grow(total)
			for i := 1; i <= n; i++ {
				b.WriteString(lua.LVAsString(L.Get(i)))
			}
			L.Push(lua.LString(b.String()))
			return 1
		}
		rhs := L.Get(n)
		for i := n - 1; i >= 1; i-- {
			lhs := L.Get(i)
			if lua.LVCanConvToString(lhs) && lua.LVCanConvToString(rhs) {
				a, b := lua.LVAsString(lhs), lua.LVAsString(rhs)
				if len(a) > max-len(b) {
					L.RaiseError("string concatenation: the result would be over the limit of %d bytes", max)
				}
				rhs = lua.LString(a + b)
				continue
			}
			mm := L.GetMetaField(lhs, "__concat")
			if mm == lua.LNil {
				mm = L.GetMetaField(rhs, "__concat")
			}
			if mm == lua.LNil {
				bad := lhs
				if lua.LVCanConvToString(lhs) {
					bad = rhs
				}
				L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
			}
			L.Push(mm)
			L.Push(lhs)
			L.Push(rhs)
			L.Call(2, 1)
			rhs = L.Get(-1)
			L.Pop(1)
		}
		L.Push(rhs)
		return 1
	}
}

// setIndexName and tableName are the functions that t[k] = v and a table
// constructor with computed keys call instead of the VM's own writes (see
// guardIndex); like concatName, they are not valid identifiers.
const (
	setIndexName = "awaken setindex"
	tableName    = "awaken table"
)

// sparseGap is how far past the end of a list an integer key may land. A
// write further out would make gopher-lua fill the gap with nils one slot
// at a time, inside one VM instruction the hook budget cannot interrupt
// (t[67108863] = 1: 13 s and 5.9 GB); it raises instead. Filling 65,536
// slots costs about 4 ms.
const sparseGap = 1 << 16

// guardIndex turns t[k] = v, where k is not a string constant or a small
// number, into setIndexName(t, k, v). t.name = v and t["name"] = v stay
// as they are: a string key never lands in the array part.
func (r *rewriter) guardIndex(s ast.Stmt) ast.Stmt {
	a, ok := s.(*ast.AssignStmt)
	if !ok || len(a.Lhs) != 1 {
		return s
	}
	get, ok := a.Lhs[0].(*ast.AttrGetExpr)
	if !ok || safeKey(get.Key) {
		return s
	}
	r.indexed = true
	fn := &ast.IdentExpr{Value: setIndexName}
	fn.SetLine(a.Line())
	call := &ast.FuncCallExpr{Func: fn, Args: []ast.Expr{get.Object, get.Key, a.Rhs[0]}}
	call.SetLine(a.Line())
	call.SetLastLine(a.LastLine())
	out := &ast.FuncCallStmt{Expr: call}
	out.SetLine(a.Line())
	out.SetLastLine(a.LastLine())
	return out
}

// guardTable turns a constructor with computed keys, {[k] = v, ...}, into
// tableName({...}, k, v, ...): the constructor keeps its list items and
// named fields, and the computed keys are set through the same check as
// t[k] = v.
func (r *rewriter) guardTable(x *ast.TableExpr) ast.Expr {
	var keep []*ast.Field
	var args []ast.Expr
	for _, f := range x.Fields {
		if f.Key == nil || safeKey(f.Key) {
			keep = append(keep, f)
			continue
		}
		args = append(args, f.Key, f.Value)
	}
	if args == nil {
		return x
	}
	r.indexed = true
	x.Fields = keep
	fn := &ast.IdentExpr{Value: tableName}
	fn.SetLine(x.Line())
	call := &ast.FuncCallExpr{Func: fn, Args: append([]ast.Expr{x}, args...)}
	call.SetLine(x.Line())
	call.SetLastLine(x.LastLine())
	return call
}

// safeKey reports whether a key expression can never land far past the end
// of a list: a string constant, or a number constant below sparseGap.
func safeKey(k ast.Expr) bool {
	switch k := k.(type) {
	case *ast.StringExpr:
		return true
	case *ast.NumberExpr:
		n, err := strconv.ParseFloat(k.Value, 64)
		return err == nil && n < sparseGap
	}
	return false
}

// setIndex implements t[k] = v for computed keys: an integer key past the
// end of a list by more than sparseGap raises; everything else is the VM's
// own assignment, metamethods included.
func setIndex(L *lua.LState) int {
	t, k, v := L.Get(1), L.Get(2), L.Get(3)
	checkSparse(L, t, k)
	if tb, ok := t.(*lua.LTable); ok && tb.Metatable == lua.LNil {
		// A plain table, as the VM writes it (nil and NaN keys raise).
		L.RawSet(tb, k, v)
		return 0
	}
	L.SetTable(t, k, v)
	return 0
}

// newTable implements a constructor with computed keys.
func newTable(L *lua.LState) int {
	t := L.CheckTable(1)
	for i := 2; i+1 <= L.GetTop(); i += 2 {
		k := L.Get(i)
		checkSparse(L, t, k)
		if k == lua.LNil {
			L.RaiseError("table index is nil")
		}
		L.SetTable(t, k, L.Get(i+1))
	}
	L.SetTop(1)
	return 1
}

func checkSparse(L *lua.LState, t, k lua.LValue) {
	n, ok := k.(lua.LNumber)
	if !ok || n < sparseGap || n >= lua.LNumber(lua.MaxArrayIndex) || float64(n) != math.Trunc(float64(n)) {
		return
	}
	tb, ok := t.(*lua.LTable)
	if !ok {
		return
	}
	if tb.RawGetInt(int(n)-sparseGap) != lua.LNil {
		return // the list reaches that far: O(1) for the common case
	}
	if l := tb.MaxN(); int(n) > l+sparseGap {
		L.RaiseError("t[%d] = v: the key is %d past the end of the list (%d items); integer keys grow a list one item at a time, so use a string key (tostring(id)) for sparse ids",
			int64(n), int(n)-l, l)
	}
}
