// Package shell splits a shell command line into the simple commands it
// would run, so that permission rules can judge each of them.
//
// It parses with a real shell parser (mvdan.cc/sh/v3/syntax, bash dialect):
// a splitter written by hand cannot be trusted with a security decision,
// since quoting, substitutions and here-documents decide where a command
// starts. Split finds the commands after &&, ||, ;, |, & and newlines,
// inside $(...), backticks, <(...) and >(...), subshells, brace groups,
// if/while/until/for/case bodies and function bodies; it looks through
// wrappers (sudo, env, nice, timeout, nohup, command, exec, xargs, ...)
// and reports the wrapped command as well as the wrapper, and it parses the
// script of bash -c, sh -c, zsh -c (and other shells), eval, env -S, trap's
// action and alias's value (code once expand_aliases is set), to a bounded
// depth. Builtins go by their bare name only: ./alias or /tmp/x/trap is a
// program on disk, whose arguments are its own. A wrapper's option that may hide the command (an abbreviated GNU
// long option that takes a value, a word not literal) makes it unknown.
//
// Words that are not literal (a parameter expansion, a glob, a command
// substitution, a brace expansion, a tilde, a $"..." string) cannot
// be known before the command runs. Split marks them instead of guessing:
// each Word says whether it is Literal, and a word that is not holds its
// source text as written. Callers must fail closed on them: a rule that
// denies `rm *` cannot tell what `$CMD -rf /` runs, so it must treat an
// unknown command name as a match. A shell whose script is not literal
// (bash -c "$X", eval "$X", a shell reading its script from stdin or from
// a file in /dev or /proc, sudo -s, xargs sh -c with the script read from
// input, source <(...)) yields a command of a single non-literal word, the
// script as written. So is code bash runs from text: ${x@P}; quoted
// $ or ` in arithmetic (let 'a[$(rm x)]'), in a declaration's value or in
// the arguments of a builtin that reads variable names (printf -v, read,
// unset, test -v); and, once for the line, quoted $ or ` in a value a
// variable takes (an assignment, a declaration, a for list, printf -v, read
// from the line) together with arithmetic that reads a variable (an
// assignment's subscript and declare -i included), or ${!x}, since a value
// such as 'a[$(rm x)]' runs rm when arithmetic reads it. A value that reaches a
// variable only at run time (read from a file, a command's output) is not
// followed, as a script file is not. A word that xargs -I or find -exec
// fills in ({}) is not literal, and a find with a word not literal (it may
// be -exec) runs an unknown command.
//
// A command that does not parse, holds a carriage return (which the parser
// reads as a blank, and drops before a newline, where bash keeps it in a
// word), or is too large or too deeply nested to check, is an error (code
// shell_unparsable): callers treat it as a command they cannot judge,
// never as an empty one.
package shell

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep hostile input cheap. The parser recurses once per level
// of nesting, with a few KiB of stack each, so nesting is checked before
// parsing.
const (
	// MaxInput is the largest command Split reads, in bytes.
	MaxInput = 64 << 10
	// MaxNesting is the deepest nesting of brackets and compound commands
	// ((, {, [, if, case, for, while, until, select) Split parses.
	MaxNesting = 100
	// MaxScriptDepth is how many scripts deep Split looks (bash -c 'bash -c
	// "..."'); the command line itself is depth 0.
	MaxScriptDepth = 8
	// MaxWrappers is the longest chain of wrappers Split unwraps in one
	// command (sudo nice timeout 5 ...).
	MaxWrappers = 16
	// MaxCommands is the most commands Split reports for one command line.
	MaxCommands = 4096
	// MaxWords is the most words Split reports, summed over its commands:
	// their argv, their redirection targets and their assignments. A
	// wrapped command repeats the words after its wrapper, a script's
	// command its shell's assignments, and every command in a redirected
	// group carries the group's targets, so the sum can outgrow the input.
	MaxWords = 1 << 16

	maxTreeDepth = 5000 // syntax tree depth Split walks (&& and | chains nest two levels a command)
)

// CodeUnparsable is the error code of every error Split returns.
const CodeUnparsable errs.Code = "shell_unparsable"

// Via says how a command was found.
type Via uint8

const (
	// Top: a command of the command line itself, or of a command
	// substitution, process substitution or function in it.
	Top Via = iota
	// Wrapper: the command a transparent wrapper runs in its own place:
	// timeout, time, nice, nohup, stdbuf, command, builtin, exec, noglob,
	// and xargs without options. Its parent is the wrapper's command.
	Wrapper
	// Runner: a command another program runs with changed privileges,
	// environment or arguments: sudo, doas, env, setsid, xargs with
	// options, find -exec, ionice, chrt, taskset, chroot, unshare, nsenter,
	// strace, fakeroot, pkexec, busybox, flock, watch..., a wrapper
	// builtin's namesake on disk
	// (/usr/bin/command); a command of the script su -c and runuser -c run
	// as another user, and of the command line ssh runs remotely or here
	// (ProxyCommand); and a command of trap's action or alias's value,
	// which runs as that builtin's effect. Its parent is that command.
	Runner
	// Script: a command of a script that its parent (a shell with -c, eval,
	// env -S) runs.
	Script
)

func (v Via) String() string {
	switch v {
	case Top:
		return "top"
	case Wrapper:
		return "wrapper"
	case Runner:
		return "runner"
	case Script:
		return "script"
	}
	return fmt.Sprintf("Via(%d)", uint8(v))
}

// Word is one word of a command.
type Word struct {
	// Value is the word after quote removal when it is Literal, else its
	// source text.
	Value string
	// Source is the word as written, quotes included.
	Source string
	// Literal is false when the word's value is only known at run time.
	Literal bool
	// One marks a word that find -exec or xargs -I fills in at run time
	// ({} in it): not Literal, but always exactly one argument (a path, or
	// an input line, is never split into more, whatever blanks it has).
	One bool
}

// Command is one simple command.
type Command struct {
	// Argv holds the value of each word (Words[i].Value): leading
	// assignments and redirections are left out.
	Argv []string
	// Words are the words of Argv with their source and literalness.
	Words []Word
	// Dynamic reports whether some word is not literal.
	Dynamic bool
	// Text is the command's source text, assignments and redirections
	// included (for a wrapped command, from its first word on).
	Text string
	// Env holds the leading assignments (FOO=1), as written; for a command
	// another one runs (Parent >= 0), that one's Env first, since its
	// assignments are in this command's environment too. A statement of
	// assignments only (FOO=1) is a command with Env and no words.
	Env []string
	// Writes are the targets of output redirections (>, >>, >|, &>, &>>,
	// <>, >& to a file) that apply to the command, its enclosing groups'
	// included.
	Writes []Word
	// Parent is the index of the command this one was found in (Wrapper,
	// Runner, Script), or -1 for a Top command of the command line.
	Parent int
	// Via says how the command was found.
	Via Via
}

// Unknown reports whether the command's name is not known before it runs
// ($CMD args, or the script of bash -c "$X").
func (c Command) Unknown() bool { return len(c.Words) > 0 && !c.Words[0].Literal }

// Line renders the command on one line, the form permission rules match:
// literal words quoted only where the shell needs it to keep them one word
// with the same value, other words as written; assignments and
// redirections left out. (A first word that is a keyword or an assignment,
// possible only when it was quoted, is not quoted again.)
func (c Command) Line() string {
	var b strings.Builder
	for i, w := range c.Words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if !w.Literal {
			b.WriteString(w.Source)
			continue
		}
		b.WriteString(quote(w))
	}
	return b.String()
}

// Split parses src as bash and returns its simple commands in source
// order, each wrapper before the command it wraps and each command before
// the commands of its substitutions and scripts.
func Split(src string) ([]Command, error) {
	var sp Splitter
	return sp.Split(src)
}

// Splitter splits commands as Split does, reusing its parser between
// calls: a parser holds 2 KB of buffers, which a hot caller (one Lua state
// gating every shell call) should not allocate per command. A Splitter is
// not safe for concurrent use; its zero value is ready.
type Splitter struct {
	p *syntax.Parser
}

// Split is Split with the splitter's parser.
func (sp *Splitter) Split(src string) ([]Command, error) {
	if sp.p == nil {
		sp.p = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	s := &splitter{p: sp.p}
	if err := s.script(src, 0, -1, Top); err != nil {
		return nil, err
	}
	if s.evaluates && (s.varCode || s.quotedCode && (s.reads || s.posAssign)) || s.positional && s.quotedCode {
		w := walker{s: s, src: src, owner: -1}
		const what = "(a value run as code by arithmetic or ${!x})"
		w.add([]iword{{Word{Value: what, Source: what}, -1, -1}}, "", -1, nil, nil, -1, Top, MaxWrappers, false)
		if w.err != nil {
			return nil, w.err
		}
	}
	return s.out, nil
}

type splitter struct {
	p     *syntax.Parser // reused: a parse keeps nothing of the last one
	out   []Command
	words int // argv words and write targets reported so far
	// Bash runs a command substitution in an array subscript held in a
	// variable that arithmetic reads (x='a[$(rm x)]'; echo $((x))), so a
	// line runs code it does not show when such text can reach a variable
	// that arithmetic reads:
	//
	// quotedCode: some quoted or escaped text holds $ or ` (awk '{print
	// $1}' too); varCode: such text is in a value a variable takes (an
	// assignment, a declaration, a for list, printf -v whatever its
	// format); reads: read, mapfile or getopts sets variables from text
	// the line may hold; posAssign: a value is taken from the positional
	// parameters, which any argument may be (f 'x' for a function f);
	// evaluates: arithmetic reads a named variable (or a variable is
	// declared -i or -n, or ${!x}); positional: arithmetic reads a
	// positional parameter or a variable bash sets from text ($1, $_,
	// BASH_REMATCH, REPLY).
	quotedCode, varCode, reads, posAssign, evaluates, positional bool
}

func unparsable(offset int, format string, args ...any) error {
	e := errs.New(CodeUnparsable, format, args...)
	if offset >= 0 {
		e.Msg = fmt.Sprintf("at byte %d: %s", offset, e.Msg)
	}
	return e
}

// script splits one script: the command line (depth 0, owner -1) or the
// script a shell, eval, env -S, trap or alias of command owner runs, whose
// commands are found via via.
func (s *splitter) script(src string, depth, owner int, via Via) error {
	if depth > MaxScriptDepth {
		return unparsable(-1, "scripts nested more than %d deep (bash -c inside bash -c ...); the command cannot be checked", MaxScriptDepth)
	}
	if len(src) > MaxInput {
		return unparsable(-1, "the command is %d bytes, more than the %d this check reads", len(src), MaxInput)
	}
	if at := strings.IndexByte(src, 0); at >= 0 {
		return unparsable(at, "a NUL byte, which no shell command holds")
	}
	// The parser reads a carriage return as a blank and drops it before a
	// newline (so \<CR><LF> continues the line); bash keeps it as part of
	// a word. Where they disagree a command can hide, so none is judged.
	if at := strings.IndexByte(src, '\r'); at >= 0 {
		return unparsable(at, "a carriage return, which the parser does not read as bash does (use LF line endings)")
	}
	n, at, bq := nesting(src)
	if n > MaxNesting {
		return unparsable(at, "nested more than %d deep; the command cannot be checked", MaxNesting)
	}
	if bq >= 0 {
		return unparsable(bq, "backticks inside backticks; the command cannot be checked (write $(...) instead)")
	}
	f, err := s.p.Parse(strings.NewReader(src), "")
	if err != nil {
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			return unparsable(int(pe.Pos.Offset()), "not valid shell syntax: %s", pe.Text)
		}
		var le syntax.LangError
		if errors.As(err, &le) {
			return unparsable(int(le.Pos.Offset()), "not valid bash: %s", le.Feature)
		}
		return unparsable(-1, "not valid shell syntax: %v", err)
	}
	// Bash skips a -- right after time or time -p (time -- rm x runs rm);
	// the parser takes it for the command's name. Blanking it (offsets
	// kept) and parsing again reads the line as bash does. Each time
	// keyword skips one (time -- -- x runs --), and each round blanks at
	// least one, so this ends.
	var timed map[int]bool
	for {
		at := timeDashes(f, src, &timed)
		if len(at) == 0 {
			break
		}
		b := []byte(src)
		for _, o := range at {
			b[o], b[o+1] = ' ', ' '
		}
		src = string(b)
		if f, err = s.p.Parse(strings.NewReader(src), ""); err != nil {
			return unparsable(-1, "not valid shell syntax once time's -- is skipped: %v", err)
		}
	}
	w := walker{s: s, src: src, depth: depth, owner: owner, scriptVia: via}
	syntax.Walk(f, w.visit)
	return w.err
}

// timeDashes returns the offsets of each unquoted -- that bash skips
// after time or time -p, which the parser reads as a command's first word.
// done holds the offsets of the time keywords already seen to.
func timeDashes(f *syntax.File, src string, done *map[int]bool) []int {
	if !strings.Contains(src, "--") {
		return nil
	}
	var at []int
	syntax.Walk(f, func(n syntax.Node) bool {
		tc, ok := n.(*syntax.TimeClause)
		if !ok || tc.Stmt == nil || tc.Stmt.Negated || (*done)[int(tc.Time.Offset())] {
			return true
		}
		var first *syntax.Word
		syntax.Walk(tc.Stmt, func(m syntax.Node) bool {
			if first != nil {
				return false
			}
			if c, ok := m.(*syntax.CallExpr); ok && len(c.Args) > 0 {
				first = c.Args[0]
				return false
			}
			return true
		})
		if first == nil || len(first.Parts) != 1 {
			return true
		}
		if l, ok := first.Parts[0].(*syntax.Lit); !ok || l.Value != "--" {
			return true
		}
		// Only right after the keyword (and -p): elsewhere -- is a word.
		o, t := int(first.Pos().Offset()), int(tc.Time.Offset())+len("time")
		if o < t || o+2 > len(src) {
			return true
		}
		between := strings.Fields(strings.ReplaceAll(src[t:o], "\\\n", " "))
		if len(between) == 0 || len(between) == 1 && between[0] == "-p" {
			at = append(at, o)
			if *done == nil {
				*done = map[int]bool{}
			}
			(*done)[int(tc.Time.Offset())] = true
		}
		return true
	})
	return at
}

// walker visits one script's syntax tree.
type walker struct {
	s     *splitter
	src   string
	depth int
	owner int
	// scriptVia is how the script's commands are found: Script, or Runner
	// for trap's action and alias's value, which run only as the parent
	// command's effect and so need it allowed too.
	scriptVia Via
	// targets are the output redirection targets of the statements around
	// the current node, outermost first; marks holds, for each open node
	// that added some, the length of targets before it did.
	targets []Word
	marks   []int
	opened  []uint8 // for each open node, openRedir and openArith
	arith   int     // open nodes whose text bash evaluates as arithmetic
	// subscripts are the subscripts of assignments (a[x]=1) not yet
	// visited: arithmetic, though no node around them says so.
	subscripts []syntax.Node
	err        error
}

const (
	openRedir uint8 = 1 << iota // the node is on marks
	openArith                   // the node counts in arith
)

func (w *walker) visit(n syntax.Node) bool {
	if n == nil {
		top := w.opened[len(w.opened)-1]
		if top&openRedir != 0 {
			w.targets = w.targets[:w.marks[len(w.marks)-1]]
			w.marks = w.marks[:len(w.marks)-1]
		}
		if top&openArith != 0 {
			w.arith--
		}
		w.opened = w.opened[:len(w.opened)-1]
		return true
	}
	if w.err != nil {
		return false
	}
	if len(w.opened) >= maxTreeDepth {
		w.err = unparsable(int(n.Pos().Offset()), "nested more than %d deep; the command cannot be checked", maxTreeDepth)
		return false
	}
	var flags uint8
	if w.evaluated(n) {
		flags |= openArith
		w.arith++
	}
	st, ok := n.(*syntax.Stmt)
	if ok && len(st.Redirs) > 0 {
		flags |= openRedir
		w.marks = append(w.marks, len(w.targets))
		w.targets = w.outputs(st, w.targets)
	}
	w.opened = append(w.opened, flags)
	if w.err != nil {
		return false
	}
	if !ok {
		return true
	}
	switch cmd := st.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(st, cmd)
	case *syntax.DeclClause:
		w.decl(st, cmd)
	case nil:
		if len(st.Redirs) > 0 { // > file: redirections only
			start, end := span(st, st.Redirs[0].Pos(), st.Redirs[0].End())
			w.add(nil, w.text(start, end), int(end.Offset()), nil, w.writes(), w.parent(), w.via(), 0, false)
		}
	}
	return w.err == nil
}

// evaluated looks at a node for code that bash runs from text: it records
// quoted text with $ or ` and variables that arithmetic reads (see
// splitter), reports ${x@P} and quoted code in arithmetic (let 'a[$(rm
// x)]', [[ 'a[$(rm x)]' -eq 1 ]]) as unknown commands, records let as a
// command, and reports whether the node's text is evaluated as
// arithmetic or as a variable name with a subscript.
func (w *walker) evaluated(n syntax.Node) bool {
	if k := len(w.subscripts); k > 0 && w.subscripts[k-1] == n {
		w.subscripts = w.subscripts[:k-1]
		w.evaluated1(n)
		return true
	}
	return w.evaluated1(n)
}

func (w *walker) evaluated1(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.Assign:
		if x.Index != nil { // visited next but one, after the name
			w.subscripts = append(w.subscripts, x.Index)
		}
	case *syntax.Lit:
		if codeText(x) {
			w.quoted(x)
		} else if w.arith > 0 && nameStart(x.Value) {
			w.s.readsVar(x.Value)
		}
	case *syntax.SglQuoted:
		if codeText(x) {
			w.quoted(x)
		}
	case *syntax.ParamExp:
		switch {
		case x.Excl && x.Names == 0:
			w.s.evaluates, w.s.positional = true, true
		case w.arith > 0 && x.Param != nil:
			w.s.readsVar(x.Param.Value)
		}
		if x.Exp != nil && x.Exp.Op == syntax.OtherParamOps && x.Exp.Word != nil {
			if v, _ := literal(x.Exp.Word); v == "P" { // prompt expansion runs $(...) in the value
				w.unknown(w.parent(), w.text(x.Pos(), x.End()), w.via())
			}
		}
		return x.Index != nil || x.Slice != nil
	case *syntax.LetClause:
		w.let(x)
		return true
	case *syntax.WordIter: // for x in WORDS
		for _, it := range x.Items {
			w.s.value(it)
		}
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.CStyleLoop:
		return true
	case *syntax.BinaryTest:
		return x.Op >= syntax.TsEql && x.Op <= syntax.TsGtr
	case *syntax.UnaryTest:
		return x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar
	}
	return false
}

// quoted notes quoted text holding $ or `: in arithmetic it is code run
// at once, elsewhere it may be once a variable holds it.
func (w *walker) quoted(n syntax.Node) {
	if w.arith > 0 {
		w.unknown(w.parent(), w.text(n.Pos(), n.End()), w.via())
		return
	}
	w.s.quotedCode = true
}

// readsVar notes that arithmetic reads the variable name.
func (s *splitter) readsVar(name string) {
	if name == "@" || name == "*" {
		s.positional = true
		return
	}
	if n := strings.IndexFunc(name, func(r rune) bool {
		return r != '_' && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}); n >= 0 {
		name = name[:n]
	}
	switch {
	case name == "": // $#, $?, $$, $!, $-: numbers and flags
	case name[0] >= '0' && name[0] <= '9', textVars[name], strings.HasPrefix(name, "BASH_"):
		s.positional = true
	default:
		s.evaluates = true
	}
}

// textVars are variables bash sets from the text of a command or its
// input: the last argument, a regex match, what read or getopts read.
var textVars = map[string]bool{"_": true, "REPLY": true, "OPTARG": true, "MAPFILE": true, "READLINE_LINE": true, "COMP_LINE": true}

// value notes a value a variable takes: quoted code in it (even inside a
// command substitution, x=$(echo '$(rm x)')), or positional parameters.
func (s *splitter) value(n syntax.Node) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
			if codeText(m) {
				s.varCode = true
			}
		case *syntax.ParamExp:
			if m.Param != nil && m.Param.Value != "" && (m.Param.Value[0] >= '0' && m.Param.Value[0] <= '9' ||
				m.Param.Value == "@" || m.Param.Value == "*" || textVars[m.Param.Value] || strings.HasPrefix(m.Param.Value, "BASH_")) {
				s.posAssign = true
			}
		}
		return !(s.varCode && s.posAssign)
	})
}

func nameStart(s string) bool {
	return s != "" && (s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// let records let EXPR...: a command, whose expressions are not literal.
func (w *walker) let(l *syntax.LetClause) {
	words := []iword{{Word{Value: "let", Source: "let", Literal: true}, int(l.Let.Offset()), int(l.Let.Offset()) + 3}}
	for _, e := range l.Exprs {
		src := w.text(e.Pos(), e.End())
		words = append(words, iword{Word{Value: src, Source: src}, int(e.Pos().Offset()), int(e.End().Offset())})
	}
	w.add(words, w.text(l.Pos(), l.End()), int(l.End().Offset()), nil, w.writes(), w.parent(), w.via(), 0, false)
}

// text returns the source of [pos, end).
func (w *walker) text(pos, end syntax.Pos) string {
	a, b := int(pos.Offset()), int(end.Offset())
	if a < 0 || b > len(w.src) || a > b {
		return ""
	}
	return w.src[a:b]
}

// span widens [start, end) to take in the statement's redirections.
func span(st *syntax.Stmt, start, end syntax.Pos) (syntax.Pos, syntax.Pos) {
	for _, r := range st.Redirs {
		if r.Pos().Offset() < start.Offset() {
			start = r.Pos()
		}
		if r.End().Offset() > end.Offset() {
			end = r.End()
		}
	}
	return start, end
}

// outputs appends the targets of the statement's output redirections to
// out.
func (w *walker) outputs(st *syntax.Stmt, out []Word) []Word {
	for _, r := range st.Redirs {
		if r.Word == nil {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		case syntax.DplOut:
			// >&2 and >&- duplicate or close a descriptor; >&file writes.
			if v, lit := w.word(r.Word); lit.Literal && (v == "-" || isDigits(v)) {
				continue
			}
		default:
			continue
		}
		_, wd := w.word(r.Word)
		out = append(out, wd)
	}
	return out
}

// writes returns the output redirection targets of the current statement
// and of every statement around it. Past MaxWords it fails the walk
// instead of copying them.
func (w *walker) writes() []Word {
	if len(w.targets) == 0 {
		return nil
	}
	if w.s.words+len(w.targets) > MaxWords {
		w.err = tooManyWords()
		return nil
	}
	return append([]Word(nil), w.targets...)
}

func tooManyWords() error {
	return unparsable(-1, "more than %d words, redirection targets and assignments in all (wrappers, scripts and redirected groups repeat them); the command cannot be checked", MaxWords)
}

func (w *walker) call(st *syntax.Stmt, c *syntax.CallExpr) {
	// FOO=1 alone is a command too: it sets the variable for the commands
	// after it (PATH=./bin; git status), so allow rules must cover it.
	start, end := span(st, c.Pos(), c.End())
	words := make([]iword, len(c.Args))
	for i, a := range c.Args {
		_, words[i] = w.iword(a)
	}
	env := make([]string, len(c.Assigns))
	for i, a := range c.Assigns {
		env[i] = w.text(a.Pos(), a.End())
		w.assigned(a)
	}
	idx := w.add(words, w.text(start, end), int(end.Offset()), env, w.writes(), w.parent(), w.via(), 0, false)
	w.rebindTable(idx, words, env)
	if len(c.Args) > 0 {
		if name, ok := literal(c.Args[0]); ok && namesVars(name, words) {
			w.quotedIn(c.Args[1:])
		}
	}
}

// builtin notes what a builtin does to the line's variables: printf -v
// stores text that may hold $ or ` made from escapes (\x24), and declare
// -i or -n makes every later value of the variable arithmetic or a name
// with a subscript, both evaluated.
func (s *splitter) builtin(words []iword) {
	if !words[0].Literal {
		return
	}
	switch words[0].Value {
	case "printf":
		for _, x := range words[1:] {
			if !x.Literal || strings.HasPrefix(x.Value, "-v") {
				s.varCode = true
			}
		}
	case "read", "mapfile", "readarray", "getopts":
		s.reads = true
	case "declare", "typeset", "local", "export", "readonly":
		for _, x := range words[1:] {
			if !x.Literal && !strings.Contains(x.Source, "=") ||
				x.Literal && len(x.Value) > 1 && (x.Value[0] == '-' || x.Value[0] == '+') &&
					!strings.Contains(x.Value, "=") && strings.ContainsAny(x.Value, "in") {
				s.evaluates = true
			}
		}
	}
}

// namesVars reports whether a builtin reads some of its arguments as
// variable names, whose subscripts bash evaluates (printf -v 'a[$(rm
// x)]' runs rm).
func namesVars(name string, words []iword) bool {
	switch name {
	case "read", "unset", "test", "[", "mapfile", "readarray", "getopts", "wait", "export", "readonly",
		"declare", "typeset", "local":
		return true
	case "printf":
		for _, x := range words[1:] {
			if strings.HasPrefix(x.Value, "-v") || !x.Literal {
				return true
			}
		}
	}
	return false
}

// quotedIn reports an unknown command for the first word that holds
// quoted or escaped $ or `: code once bash evaluates it.
func (w *walker) quotedIn(words []*syntax.Word) {
	for _, x := range words {
		if quotedDollar(x) {
			w.unknown(w.parent(), w.text(x.Pos(), x.End()), w.via())
			return
		}
	}
}

// quotedDollar reports whether the quoted or escaped text of a word holds
// $ or ` (an expansion in it is not text).
func quotedDollar(x *syntax.Word) bool {
	for _, p := range x.Parts {
		if codeText(p) {
			return true
		}
		if d, ok := p.(*syntax.DblQuoted); ok {
			for _, q := range d.Parts {
				if _, lit := q.(*syntax.Lit); lit && codeText(q) {
					return true
				}
			}
		}
	}
	return false
}

// codeText reports whether a literal or single-quoted part's text (an
// ANSI-C one decoded) holds $ or `: text bash may yet run as code.
func codeText(n syntax.Node) bool {
	switch p := n.(type) {
	case *syntax.Lit:
		return strings.ContainsAny(p.Value, "$`")
	case *syntax.SglQuoted:
		v := p.Value
		if p.Dollar {
			v, _ = ansiC(v)
		}
		return strings.ContainsAny(v, "$`")
	}
	return false
}

func (w *walker) decl(st *syntax.Stmt, d *syntax.DeclClause) {
	start, end := span(st, d.Pos(), d.End())
	words := []iword{{Word{Value: d.Variant.Value, Source: d.Variant.Value, Literal: true}, int(d.Variant.Pos().Offset()), int(d.Variant.End().Offset())}}
	var values []*syntax.Word
	for _, a := range d.Args {
		words = append(words, w.assign(a))
		if !a.Naked || a.Value == nil {
			w.assigned(a)
		}
		if a.Value != nil {
			values = append(values, a.Value)
		}
	}
	idx := w.add(words, w.text(start, end), int(end.Offset()), nil, w.writes(), w.parent(), w.via(), 0, false)
	w.rebindTable(idx, words, nil)
	// declare -a a='($(rm x))' evaluates the value as an array assignment,
	// and declare 'a[$(rm x)]=1' the subscript.
	w.quotedIn(values)
}

// assigned notes the value an assignment gives.
func (w *walker) assigned(a *syntax.Assign) {
	if a.Value != nil {
		w.s.value(a.Value)
	}
	if a.Array != nil {
		w.s.value(a.Array)
	}
}

// assign renders a declaration's argument (export A=1, local x, declare -a
// arr=(...)) as a word.
func (w *walker) assign(a *syntax.Assign) iword {
	src := w.text(a.Pos(), a.End())
	iw := iword{Word{Value: src, Source: src}, int(a.Pos().Offset()), int(a.End().Offset())}
	switch {
	case a.Index != nil || a.Array != nil:
	case a.Naked && a.Value != nil:
		_, iw = w.iword(a.Value)
	case a.Naked:
		iw.Literal = true
	case a.Value == nil:
		iw.Literal, iw.Value = true, a.Name.Value+"="
		if a.Append {
			iw.Value = a.Name.Value + "+="
		}
	default:
		if v, lw := w.word(a.Value); lw.Literal {
			op := "="
			if a.Append {
				op = "+="
			}
			iw.Literal, iw.Value = true, a.Name.Value+op+v
		}
	}
	return iw
}

func (w *walker) parent() int {
	if w.depth == 0 {
		return -1
	}
	return w.owner
}

func (w *walker) via() Via {
	if w.depth == 0 {
		return Top
	}
	return w.scriptVia
}

// iword is a word with its offsets in the script it came from; off is -1
// for a word made up by Split.
type iword struct {
	Word
	off, end int
}

func (w *walker) iword(x *syntax.Word) (string, iword) {
	v, wd := w.word(x)
	return v, iword{wd, int(x.Pos().Offset()), int(x.End().Offset())}
}

// word classifies a word: its value when it is literal, else its source.
func (w *walker) word(x *syntax.Word) (string, Word) {
	src := w.text(x.Pos(), x.End())
	v, ok := literal(x)
	if !ok {
		return src, Word{Value: src, Source: src}
	}
	return v, Word{Value: v, Source: src, Literal: true}
}

// add records a command and what it wraps or runs. end is the offset where
// the command's text ends in the current script.
func (w *walker) add(words []iword, text string, end int, env []string, writes []Word, parent int, via Via, wraps int, appended bool) int {
	if w.err != nil {
		return -1
	}
	if len(w.s.out) >= MaxCommands {
		w.err = unparsable(-1, "more than %d commands; the command cannot be checked", MaxCommands)
		return -1
	}
	if parent >= 0 {
		// A command another runs (a wrapper's, a shell's script) has the
		// other's assignments in its environment: PATH=./bin nice git
		// status, BASH_ENV=x bash -c '...'.
		if pe := w.s.out[parent].Env; len(pe) > 0 {
			env = append(pe[:len(pe):len(pe)], env...)
		}
	}
	// Inherited assignments count: each script command repeats its
	// shell's, so they could outgrow the input as wrapped words can.
	if w.s.words+len(words)+len(writes)+len(env) > MaxWords {
		w.err = tooManyWords()
		return -1
	}
	w.s.words += len(words) + len(writes) + len(env)
	c := Command{Text: text, Env: env, Writes: writes, Parent: parent, Via: via}
	c.Argv = make([]string, len(words))
	c.Words = make([]Word, len(words))
	for i, x := range words {
		c.Argv[i], c.Words[i] = x.Value, x.Word
		c.Dynamic = c.Dynamic || !x.Literal
	}
	idx := len(w.s.out)
	w.s.out = append(w.s.out, c)
	if len(words) == 0 {
		return idx
	}
	w.s.builtin(words)
	w.inner(idx, words, end, writes, wraps, appended)
	return idx
}

// inner records the commands that command idx (words) runs: the command a
// wrapper wraps, the commands find -exec runs, or a shell's script.
// appended says that more arguments follow the words when it runs (xargs
// adds the ones it reads).
func (w *walker) inner(idx int, words []iword, end int, writes []Word, wraps int, appended bool) {
	first := words[0]
	if !first.Literal {
		return
	}
	name := path.Base(first.Value)
	if shells[name] {
		w.shell(idx, words, appended)
		return
	}
	// A name with a slash is a program on disk, never a builtin
	// (./alias a=ls, /tmp/x/trap ls EXIT): its arguments are its own.
	qualified := strings.Contains(first.Value, "/")
	if qualified && builtins[name] {
		return
	}
	switch name {
	case "find":
		w.find(idx, words, writes, wraps)
		return
	case "eval":
		w.eval(idx, words)
		return
	case "trap":
		w.trap(idx, words)
		return
	case "source", ".":
		w.source(idx, words)
		return
	case "alias":
		w.alias(idx, words)
		return
	case "compgen":
		w.compgen(idx, words)
		return
	case "hash", "enable":
		w.rebind(idx, words)
		return
	case "su", "runuser":
		w.su(idx, words, appended)
		return
	case "ssh":
		w.ssh(idx, words, appended)
		return
	case "env":
		if at, off, ok := envSplit(words); ok {
			w.envScript(idx, words, at, off)
			return
		}
	}
	spec, ok := wrappers[name]
	if !ok {
		return
	}
	rest, via, out := spec.unwrap(words)
	if qualified && via == Wrapper && builtinWrappers[name] {
		// /usr/bin/command ls: a program that may run its arguments, not
		// the transparent builtin; allow rules need it allowed too.
		via = Runner
	}
	switch out {
	case runsNone:
		return
	case runsEmpty:
		if appended { // the command is the first argument read
			w.unknown(idx, words[0].Source+" (command read from input)", Runner)
		}
		return
	case runsShell:
		w.unknown(idx, words[0].Source+" (shell reading its script from stdin)", Script)
		return
	case runsUnseen:
		w.unknown(idx, rest[0].Source, Runner)
		return
	}
	if name == "flock" && (rest[0].Value == "-c" || rest[0].Value == "--command") {
		// flock FILE -c CMD runs CMD with sh -c.
		switch {
		case len(rest) < 2:
		case !rest[1].Literal:
			w.unknown(idx, rest[1].Source, Runner)
		default:
			w.subVia(idx, rest[1].Value, Runner)
		}
		return
	}
	if name == "watch" && !watchExec(words[:len(words)-len(rest)]) {
		// watch runs its words joined by spaces with sh -c, as eval does.
		line, bad := joined(rest)
		if bad != nil {
			w.unknown(idx, bad.Source, Runner)
			return
		}
		w.subVia(idx, line, Runner)
		return
	}
	// Words appended to a wrapper (xargs sudo sh -c) are the wrapped
	// command's.
	more := appended
	if name == "xargs" {
		// xargs appends what it reads to the command, or with -I R puts
		// it in place of R in any word.
		r, replace := xargsReplace(words[:len(words)-len(rest)])
		if replace {
			rest = unlit(rest, r)
		} else {
			more = true
		}
	}
	w.wrapped(idx, rest, end, writes, via, wraps, more)
}

func (w *walker) wrapped(parent int, words []iword, end int, writes []Word, via Via, wraps int, appended bool) {
	if wraps >= MaxWrappers {
		w.err = unparsable(words[0].off, "more than %d wrappers around one command; the command cannot be checked", MaxWrappers)
		return
	}
	text := ""
	if words[0].off >= 0 && end >= words[0].off && end <= len(w.src) {
		text = w.src[words[0].off:end]
	}
	w.add(words, text, end, nil, writes, parent, via, wraps+1, appended)
}

// unknown records a command of which nothing is known but its source.
func (w *walker) unknown(parent int, source string, via Via) {
	wd := iword{Word{Value: source, Source: source}, -1, -1}
	w.add([]iword{wd}, source, -1, nil, nil, parent, via, MaxWrappers, false)
}

// sub splits a script that command idx runs.
func (w *walker) sub(idx int, script string) { w.subVia(idx, script, Script) }

// subVia splits a script that command idx runs, its commands found via
// via.
func (w *walker) subVia(idx int, script string, via Via) {
	if w.err != nil {
		return
	}
	w.err = w.s.script(script, w.depth+1, idx, via)
}

// watchExec reports whether watch's options say to run the command
// without a shell (-x, --exec).
func watchExec(opts []iword) bool {
	for _, x := range opts[1:] {
		v := x.Value
		if v == "--exec" {
			return true
		}
		if strings.HasPrefix(v, "--") {
			continue
		}
		for j := 1; j < len(v) && strings.IndexByte("nqd", v[j]) < 0; j++ {
			if v[j] == 'x' {
				return true
			}
		}
	}
	return false
}

// builtins are the bash builtins whose arguments Split reads as code:
// only the bare name runs them.
var builtins = map[string]bool{"eval": true, "trap": true, "source": true, ".": true, "alias": true, "compgen": true,
	"hash": true, "enable": true}

// rebind finds hash -p PATH NAME and enable -f FILE NAME, after which
// NAME runs a program or loaded code that the line does not show (hash
// -p /bin/rm ls; ls -rf /): an unknown command. So is an option not
// literal, which may be one of those.
func (w *walker) rebind(idx int, words []iword) {
	opt := byte('p')
	if words[0].Value == "enable" {
		opt = 'f'
	}
	for _, x := range words[1:] {
		if !x.Literal {
			w.unknown(idx, x.Source, Runner)
			return
		}
		if x.Value == "--" || !strings.HasPrefix(x.Value, "-") {
			return
		}
		if strings.IndexByte(x.Value, opt) >= 0 {
			w.unknown(idx, words[0].Source+" "+x.Source+" (a name rebound to a program)", Runner)
			return
		}
	}
}

// rebindTables are bash's tables of what a command name runs: a value
// set in BASH_CMDS binds a name to a program as hash -p does
// (BASH_CMDS[ls]=/bin/rm), one in BASH_ALIASES to code as alias does.
var rebindTables = []string{"BASH_CMDS", "BASH_ALIASES"}

// rebindTable makes command idx run an unknown command when its words or
// assignments name one of rebindTables, however it sets it (an
// assignment, declare, printf -v, read): the names it binds then run what
// the line does not show.
func (w *walker) rebindTable(idx int, words []iword, env []string) {
	if idx < 0 {
		return
	}
	texts := env
	for _, x := range words {
		texts = append(texts[:len(texts):len(texts)], x.Value, x.Source)
	}
	for _, t := range texts {
		for _, name := range rebindTables {
			if strings.Contains(t, name) {
				w.unknown(idx, name+" set (a name rebound to a program)", Runner)
				return
			}
		}
	}
}

// builtinWrappers are the transparent wrappers that are builtins or
// keywords (time has a program too, /usr/bin/time, that wraps the same).
var builtinWrappers = map[string]bool{"command": true, "builtin": true, "exec": true, "noglob": true}

// shells run the script after -c.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"ash": true, "yash": true, "posh": true, "rbash": true,
}

// shell finds the script of sh/bash/zsh -c SCRIPT, or knows the shell reads
// its script from stdin (no operand, or -s), which makes it unknown. A shell
// running a script file is an ordinary command, unless the file is one of
// /dev or /proc (/dev/stdin, /proc/self/fd/0: stdin again) or is not
// literal. appended: xargs adds arguments, so a -c without its script takes
// the script from input.
func (w *walker) shell(idx int, words []iword, appended bool) {
	cflag, sflag := false, false
	i := 1
	for ; i < len(words); i++ {
		x := words[i]
		if !x.Literal {
			w.unknown(idx, x.Source, Script) // options we cannot read
			return
		}
		v := x.Value
		if v == "--" || v == "-" {
			i++
			break
		}
		if strings.HasPrefix(v, "--") {
			if v == "--rcfile" || v == "--init-file" {
				// an interactive shell runs this file first
				if i+1 < len(words) {
					w.unknown(idx, words[i+1].Source+" (rcfile)", Script)
				}
				i++
			}
			continue
		}
		if len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			break
		}
		takesArg := false
		for _, ch := range v[1:] {
			switch ch {
			case 'c':
				cflag = true
			case 's':
				sflag = true
			case 'o', 'O':
				takesArg = true
			}
		}
		if takesArg {
			i++
		}
	}
	switch {
	case cflag:
		if i >= len(words) {
			if appended {
				w.unknown(idx, words[0].Source+" (script read from input)", Script)
			}
			return // bash -c with no script fails
		}
		if !words[i].Literal {
			w.unknown(idx, words[i].Source, Script)
			return
		}
		w.sub(idx, words[i].Value)
	case sflag || i >= len(words):
		w.unknown(idx, words[0].Source+" (script read from stdin)", Script)
	case !words[i].Literal || readsStdin(words[i].Value):
		w.unknown(idx, words[i].Source+" (script read from stdin)", Script)
	}
}

// readsStdin reports whether a script file may be the shell's stdin or
// another open descriptor (/dev/stdin, /dev/fd/0, /proc/self/fd/0, and
// any other file in /dev or /proc, however the path reaches them): its
// code is not in the command.
func readsStdin(file string) bool {
	if file == "-" {
		return true
	}
	for _, seg := range strings.Split(path.Clean(file), "/") {
		if seg == "dev" || seg == "proc" {
			return true
		}
	}
	return false
}

// eval runs its arguments joined by spaces.
func (w *walker) eval(idx int, words []iword) {
	args := words[1:]
	if len(args) > 0 && args[0].Value == "--" {
		args = args[1:]
	}
	line, bad := joined(args)
	if bad != nil {
		w.unknown(idx, bad.Source, Script)
		return
	}
	if len(args) > 0 {
		w.sub(idx, line)
	}
}

// joined is words' values joined by spaces, the script eval and watch
// run, or the first word not known before the command runs.
func joined(words []iword) (string, *iword) {
	parts := make([]string, len(words))
	for i := range words {
		if !words[i].Literal {
			return "", &words[i]
		}
		parts[i] = words[i].Value
	}
	return strings.Join(parts, " "), nil
}

// trap ACTION SIGNAL...: the action is a script bash runs later.
func (w *walker) trap(idx int, words []iword) {
	i := 1
	for ; i < len(words); i++ {
		x := words[i]
		if !x.Literal {
			w.unknown(idx, x.Source, Script)
			return
		}
		v := x.Value
		if v == "--" {
			i++
			break
		}
		if len(v) < 2 || v[0] != '-' || strings.Trim(v[1:], "lpP") != "" {
			break
		}
		if strings.ContainsAny(v, "lp") {
			return // lists traps
		}
	}
	if i+1 >= len(words) || words[i].Value == "-" {
		return // no action: the signals are reset
	}
	if !words[i].Literal {
		w.unknown(idx, words[i].Source, Script)
		return
	}
	w.subVia(idx, words[i].Value, Runner)
}

// source FILE runs the file in this shell: as with a shell's script file,
// one of /dev or /proc, or a file not known (<(...), $X), is code not in
// the command.
func (w *walker) source(idx int, words []iword) {
	i := 1
	if i < len(words) && words[i].Literal && words[i].Value == "--" {
		i++
	}
	if i >= len(words) {
		return
	}
	if x := words[i]; !x.Literal || readsStdin(x.Value) {
		w.unknown(idx, x.Source+" (sourced)", Script)
	}
}

// alias NAME=VALUE: with expand_aliases (shopt -s, or an interactive
// shell) the value runs as code wherever NAME starts a command, so it is
// judged as a script.
func (w *walker) alias(idx int, words []iword) {
	for _, x := range words[1:] {
		if !x.Literal {
			w.unknown(idx, x.Source, Script)
			return
		}
		if _, v, ok := strings.Cut(x.Value, "="); ok && v != "" {
			w.subVia(idx, v, Runner)
		}
	}
}

// envSplit finds env -S STRING (also clustered, -iS, -vSSTRING, and
// --split-string, which GNU getopt lets one shorten to --sp): the index of
// the word holding the string and where in it the string starts.
func envSplit(words []iword) (at, off int, ok bool) {
	for i := 1; i < len(words); i++ {
		v := words[i].Value
		if !words[i].Literal || !strings.HasPrefix(v, "-") || v == "--" {
			return 0, 0, false
		}
		if v == "-" {
			continue // -i
		}
		if strings.HasPrefix(v, "--") {
			name, _, valued := strings.Cut(v, "=")
			if shortens(name, "--split-string") {
				if valued {
					return i, len(name) + 1, true
				}
				return i + 1, 0, i+1 < len(words)
			}
			if !valued && (name == "--unset" || name == "--chdir" || name == "--argv0") {
				i++
			}
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'S':
				if j+1 < len(v) {
					return i, j + 1, true
				}
				return i + 1, 0, i+1 < len(words)
			case 'u', 'C', 'a':
				if j == len(v)-1 {
					i++
				}
				break cluster
			}
		}
	}
	return 0, 0, false
}

// envScript splits env -S STRING ARGS...: the string is split into words
// and the remaining arguments follow them.
func (w *walker) envScript(idx int, words []iword, at, off int) {
	x := words[at]
	// env -S has escapes and expansions of its own (\_ is a blank, ${V}
	// a variable), which shell syntax reads otherwise: such a string is
	// not judged.
	if !x.Literal || strings.ContainsAny(x.Value[off:], "\\$") {
		w.unknown(idx, x.Source, Script)
		return
	}
	var b strings.Builder
	b.WriteString(x.Value[off:])
	for _, r := range words[at+1:] {
		b.WriteByte(' ')
		b.WriteString(r.Source)
	}
	w.sub(idx, b.String())
}

// find records the commands of find's -exec, -execdir, -ok and -okdir. A
// word not known before find runs may be -exec, or a ; that ends one
// early, so it makes find run something unknown.
func (w *walker) find(idx int, words []iword, writes []Word, wraps int) {
	for _, x := range words[1:] {
		if !x.Literal {
			w.unknown(idx, x.Source, Runner)
			break
		}
	}
	for _, r := range findExec(words) {
		w.wrapped(idx, unlit(r, "{}"), r[len(r)-1].end, writes, Runner, wraps, false)
	}
}

// findExec returns the commands of find's -exec, -execdir, -ok and -okdir.
func findExec(words []iword) [][]iword {
	var out [][]iword
	for i := 1; i < len(words); i++ {
		switch words[i].Value {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(words) && !(words[j].Literal && (words[j].Value == ";" || words[j].Value == "+")) {
			j++
		}
		if j > i+1 {
			out = append(out, words[i+1:j])
		}
		i = j
	}
	return out
}

// unlit returns words with those holding r (what find or xargs puts a
// file name in place of) made not literal: their value is not known.
func unlit(words []iword, r string) []iword {
	var out []iword
	for i, x := range words {
		if !x.Literal || !strings.Contains(x.Value, r) {
			continue
		}
		if out == nil {
			out = append([]iword(nil), words...)
		}
		out[i].Literal, out[i].Value, out[i].One = false, x.Source, true
	}
	if out == nil {
		return words
	}
	return out
}

// xargsReplace returns the replace string of xargs's options (-I R, -iR,
// --replace[=R]; {} when not given), and whether one is set.
func xargsReplace(opts []iword) (string, bool) {
	r, set := "", false
	for i := 1; i < len(opts); i++ {
		v := opts[i].Value
		if v == "--" || !strings.HasPrefix(v, "-") {
			break
		}
		if strings.HasPrefix(v, "--") {
			name, val, valued := strings.Cut(v, "=")
			if shortens(name, "--replace") {
				r, set = "{}", true
				if valued {
					r = val
				}
			} else if !valued && wrappers["xargs"].longArgs[name] {
				i++
			}
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch ch := v[j]; {
			case ch == 'I':
				set, r = true, v[j+1:]
				if r == "" && i+1 < len(opts) {
					i++
					r = opts[i].Value
				}
				break cluster
			case ch == 'i':
				set, r = true, v[j+1:]
				if r == "" {
					r = "{}"
				}
				break cluster
			case strings.IndexByte("el", ch) >= 0:
				break cluster
			case strings.IndexByte(wrappers["xargs"].argOpts, ch) >= 0:
				if j == len(v)-1 {
					i++
				}
				break cluster
			}
		}
	}
	return r, set
}
