package shell

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzSplit checks, for any input, that Split does not panic, that what it
// returns is consistent, that a literal command reads back from its Line,
// and that the nesting bound it checks before parsing keeps up with the
// nesting the parser actually built. Seeds are in testdata/fuzz/FuzzSplit.
func FuzzSplit(f *testing.F) {
	var sp Splitter // reused across inputs, as a Lua state reuses it
	f.Fuzz(func(t *testing.T, src string) {
		cs, err := Split(src)
		again, err2 := sp.Split(src)
		if !reflect.DeepEqual(cs, again) || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("a reused splitter differs: %v %v, fresh %v %v", again, err2, cs, err)
		}
		if err == nil && strings.Contains(src, "\r") {
			t.Fatalf("a carriage return was judged (the parser does not read it as bash does): %q", render(cs))
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), string(CodeUnparsable)+": ") {
				t.Fatalf("error without its code: %v", err)
			}
			return
		}
		if len(cs) > MaxCommands {
			t.Fatalf("%d commands, more than MaxCommands", len(cs))
		}
		for i, c := range cs {
			if len(c.Argv) != len(c.Words) {
				t.Fatalf("command %d: %d argv for %d words", i, len(c.Argv), len(c.Words))
			}
			dynamic := false
			for j, w := range c.Words {
				if c.Argv[j] != w.Value {
					t.Fatalf("command %d: argv[%d] %q is not the word's value %q", i, j, c.Argv[j], w.Value)
				}
				if !w.Literal && w.Value != w.Source {
					t.Fatalf("command %d: non-literal word %q holds %q", i, w.Source, w.Value)
				}
				dynamic = dynamic || !w.Literal
			}
			if dynamic != c.Dynamic {
				t.Fatalf("command %d: Dynamic %v, words say %v", i, c.Dynamic, dynamic)
			}
			if (c.Parent == -1) != (c.Via == Top) || c.Parent >= i || c.Parent < -1 {
				t.Fatalf("command %d: parent %d via %v", i, c.Parent, c.Via)
			}
			if c.Via == Top && !strings.Contains(src, c.Text) {
				t.Fatalf("command %d: text %q is not in the input", i, c.Text)
			}
			if c.Via == Top && !c.Dynamic && len(c.Argv) > 0 && !special[c.Argv[0]] && !isAssign(c.Argv[0]) {
				roundTrip(t, c)
			}
		}
		if f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), ""); err == nil {
			// The bound may miss a level where the parser pairs quotes in
			// its own way (${"$#"...}), never levels without number: a
			// construct it does not see at all fails this at once.
			if got, bound := treeDepth(f), mustNesting(src); got > 2*bound+1 {
				t.Fatalf("the parser nested %d deep where the bound said %d", got, bound)
			}
		}
	})
}

func mustNesting(src string) int { n, _, _ := nesting(src); return n }

// special are the words the shell reads differently at the start of a
// command; a command named so (quoted) does not read back from its Line.
var special = map[string]bool{
	"if": true, "then": true, "elif": true, "else": true, "fi": true, "case": true, "esac": true,
	"for": true, "select": true, "while": true, "until": true, "do": true, "done": true, "in": true,
	"function": true, "time": true, "coproc": true, "{": true, "}": true, "!": true, "[[": true, "]]": true,
	"let": true, "declare": true, "local": true, "export": true, "readonly": true, "typeset": true, "nameref": true,
}

// roundTrip checks that a literal command's Line reads back as the same
// words.
func roundTrip(t *testing.T, c Command) {
	line := c.Line()
	if n, _, _ := nesting(line); n > MaxNesting {
		return // quoted brackets count, so the line may nest deeper
	}
	back, err := Split(line)
	if err != nil {
		t.Fatalf("Line %q of %q does not read back: %v", line, c.Argv, err)
	}
	if len(back) == 0 || strings.Join(back[0].Argv, "\x00") != strings.Join(c.Argv, "\x00") {
		t.Fatalf("Line %q of %q reads back as %q", line, c.Argv, render(back))
	}
}

// treeDepth is how deeply the syntax tree nests the constructs the parser
// recurses into (an elif or else continues its if; an extended glob is
// read as one literal).
func treeDepth(f *syntax.File) int {
	depth, deepest := 0, 0
	type open struct {
		node   syntax.Node
		counts bool
	}
	var stack []open
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			if stack[len(stack)-1].counts {
				depth--
			}
			stack = stack[:len(stack)-1]
			return true
		}
		counts := false
		switch n := n.(type) {
		case *syntax.Subshell, *syntax.Block, *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp,
			*syntax.ArithmCmd, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause,
			*syntax.DblQuoted, *syntax.ParenArithm, *syntax.ParenTest, *syntax.ArrayExpr:
			counts = true
		case *syntax.ParamExp:
			counts = !n.Short
		case *syntax.IfClause:
			_, elif := stack[len(stack)-1].node.(*syntax.IfClause)
			counts = !elif
		}
		if counts {
			depth++
			deepest = max(deepest, depth)
		}
		stack = append(stack, open{n, counts})
		return true
	})
	return deepest
}
