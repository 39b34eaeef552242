package luabridge

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// concatName is the function every ".." of a plugin calls instead of the
// VM's own concatenation. The name is not a valid Lua identifier, so a
// plugin cannot shadow it with a local.
const concatName = "awaken concat"

// rewriteConcat replaces each chain a .. b .. c with concatName(a, b, c):
// the VM's concatenation cannot be bounded or interrupted, and a string
// doubled thirty times is a gigabyte before any deadline is looked at.
// Chains of constants are left alone (their size is the source's).
func rewriteConcat(chunk []ast.Stmt) []ast.Stmt {
	r := rewriter{}
	r.stmts(chunk)
	if !r.changed {
		return chunk
	}
	// Bind the function once as a local of the chunk: every use is then an
	// upvalue read, not a global lookup.
	local := &ast.LocalAssignStmt{Names: []string{concatName}, Exprs: []ast.Expr{&ast.IdentExpr{Value: concatName}}}
	return append([]ast.Stmt{local}, chunk...)
}

type rewriter struct{ changed bool }

func (r *rewriter) stmts(ss []ast.Stmt) {
	for i, s := range ss {
		r.stmt(s)
		if a, ok := s.(*ast.AssignStmt); ok && len(a.Lhs) > 1 {
			ss[i] = multipleAssign(a)
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
func multipleAssign(a *ast.AssignStmt) ast.Stmt {
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
	switch x := s.(type) {
	case *ast.AssignStmt:
		r.exprs(x.Lhs)
		r.exprs(x.Rhs)
	case *ast.LocalAssignStmt:
		r.exprs(x.Exprs)
	case *ast.FuncCallStmt:
		x.Expr = r.expr(x.Expr)
	case *ast.DoBlockStmt:
		r.stmts(x.Stmts)
	case *ast.WhileStmt:
		x.Condition = r.expr(x.Condition)
		r.stmts(x.Stmts)
	case *ast.RepeatStmt:
		x.Condition = r.expr(x.Condition)
		r.stmts(x.Stmts)
	case *ast.IfStmt:
		x.Condition = r.expr(x.Condition)
		r.stmts(x.Then)
		r.stmts(x.Else)
	case *ast.NumberForStmt:
		x.Init = r.expr(x.Init)
		x.Limit = r.expr(x.Limit)
		if x.Step != nil {
			x.Step = r.expr(x.Step)
		}
		r.stmts(x.Stmts)
	case *ast.GenericForStmt:
		r.exprs(x.Exprs)
		r.stmts(x.Stmts)
	case *ast.FuncDefStmt:
		if x.Name != nil {
			x.Name.Func = r.expr(x.Name.Func)
			if x.Name.Receiver != nil {
				x.Name.Receiver = r.expr(x.Name.Receiver)
			}
		}
		r.stmts(x.Func.Stmts)
	case *ast.ReturnStmt:
		r.exprs(x.Exprs)
	}
}

func (r *rewriter) exprs(es []ast.Expr) {
	for i, e := range es {
		es[i] = r.expr(e)
	}
}

func (r *rewriter) expr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case nil:
		return nil
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
	case *ast.ArithmeticOpExpr:
		x.Lhs = r.expr(x.Lhs)
		x.Rhs = r.expr(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.UnaryNotOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = r.expr(x.Expr)
	case *ast.FunctionExpr:
		r.stmts(x.Stmts)
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
