package scripted

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/internal/tomlpos"
	"github.com/awaken-lua/awaken-lua/model"
)

const demo = `# a demo
[[turns]]
text = "Let me look around."
[[turns.tool_calls]]
name = "fs_list"
args = { path = "." }
[[turns.tool_calls]]
id = "optional-id"
name = "fs_read"
args = { path = "README.md", limit = 10, opts = { deep = [1, 2.5, "x"] } }
[turns.usage]
prompt_tokens = 120
completion_tokens = 30

[[turns]]
text = "Done."
`

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []Turn
	}{
		{
			name: "demo",
			src:  demo,
			want: []Turn{
				{
					Text: "Let me look around.",
					ToolCalls: []model.ToolCall{
						{Name: "fs_list", Args: map[string]any{"path": "."}},
						{ID: "optional-id", Name: "fs_read", Args: map[string]any{
							"path": "README.md", "limit": float64(10),
							"opts": map[string]any{"deep": []any{float64(1), 2.5, "x"}},
						}},
					},
					Usage: &model.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150},
				},
				{Text: "Done."},
			},
		},
		{
			name: "inline tool calls and no args",
			src: `turns = [
  { text = "a", tool_calls = [ { name = "ping" }, { name = "pong", args = { n = -2 } } ] },
  { text = "b", usage = { prompt_tokens = 1, completion_tokens = 2, total_tokens = 9 } },
]`,
			want: []Turn{
				{Text: "a", ToolCalls: []model.ToolCall{
					{Name: "ping", Args: map[string]any{}},
					{Name: "pong", Args: map[string]any{"n": float64(-2)}},
				}},
				{Text: "b", Usage: &model.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 9}},
			},
		},
		{
			name: "a turn with only tool calls",
			src:  "[[turns]]\n[[turns.tool_calls]]\nname = \"x\"\n",
			want: []Turn{{ToolCalls: []model.ToolCall{{Name: "x", Args: map[string]any{}}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tc.src), "s.toml")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string // full error texts, in order
	}{
		{
			name: "unknown turn key",
			src:  "[[turns]]\ntetx = \"hi\"\n",
			want: []string{`s.toml:2: config_invalid: unknown key "turns.tetx" (did you mean "text"?); a turn takes text, tool_calls and usage`},
		},
		{
			name: "unknown tool call key in a later turn",
			src: `[[turns]]
[[turns.tool_calls]]
name = "a"

[[turns]]
[[turns.tool_calls]]
name = "b"
[[turns.tool_calls]]
nmae = "c"
`,
			want: []string{
				`s.toml:9: config_invalid: unknown key "turns.tool_calls.nmae" (did you mean "name"?); a tool call takes id, name and args`,
				`s.toml:8: config_invalid: turn 2, tool call 2 has no name; add name = "<tool>" to it`,
			},
		},
		{
			name: "the same unknown key twice",
			src:  "[[turns]]\nfoo = 1\n[[turns]]\nfoo = 2\n",
			want: []string{
				`s.toml:2: config_invalid: unknown key "turns.foo"; a turn takes text, tool_calls and usage`,
				`s.toml:4: config_invalid: unknown key "turns.foo"; a turn takes text, tool_calls and usage`,
			},
		},
		{
			name: "unknown table is one error",
			src:  "[[turns]]\ntext = \"x\"\n[turns.usgae]\nprompt_tokens = 1\n",
			want: []string{`s.toml:3: config_invalid: unknown key "turns.usgae" (did you mean "usage"?); a turn takes text, tool_calls and usage`},
		},
		{
			name: "unknown usage key",
			src:  "[[turns]]\n[turns.usage]\nprompt_tokens = 1\ncompletion = 2\n",
			want: []string{`s.toml:4: config_invalid: unknown key "turns.usage.completion"; usage takes prompt_tokens, completion_tokens and total_tokens`},
		},
		{
			name: "unknown top-level key",
			src:  "model = \"x\"\n[[turns]]\ntext = \"a\"\n",
			want: []string{`s.toml:1: config_invalid: unknown key "model"; a script has only [[turns]]`},
		},
		{
			name: "unknown key in an inline tool call",
			src:  "[[turns]]\ntext = \"a # not a comment\"\ntool_calls = [\n  { name = \"a\" },\n  { name = \"b\", arg = {} },\n]\n",
			want: []string{`s.toml:5: config_invalid: unknown key "turns.tool_calls.arg" (did you mean "args"?); a tool call takes id, name and args`},
		},
		{
			name: "unknown key after a multi-line string",
			src:  "[[turns]]\ntext = \"\"\"\nline one\nline = two\n\"\"\"\ntools = 1\n",
			want: []string{`s.toml:6: config_invalid: unknown key "turns.tools"; a turn takes text, tool_calls and usage`},
		},
		{
			name: "syntax error",
			src:  "[[turns]]\ntext = \"unterminated\n",
			want: []string{`s.toml:2:21: config_invalid: strings cannot contain newlines`},
		},
		{
			name: "wrong type",
			src:  "[[turns]]\ntext = 5\n",
			want: []string{`s.toml:2: config_invalid: "turns.text" must be a string`},
		},
		{
			name: "args not a table",
			src:  "[[turns]]\n[[turns.tool_calls]]\nname = \"a\"\nargs = \"x\"\n",
			want: []string{`s.toml:4: config_invalid: "turns.tool_calls.args" must be a table, such as args = { path = "." }`},
		},
		{
			name: "args not a table in a later call",
			src:  "[[turns]]\n[[turns.tool_calls]]\nargs = {}\n[[turns.tool_calls]]\nname = \"b\"\nargs = [1]\n",
			want: []string{
				`s.toml:2: config_invalid: turn 1, tool call 1 has no name; add name = "<tool>" to it`,
				`s.toml:6: config_invalid: "turns.tool_calls.args" must be a table, such as args = { path = "." }`,
			},
		},
		{
			name: "usage not a table",
			src:  "[[turns]]\nusage = 5\n",
			want: []string{`s.toml:2: config_invalid: "turns.usage" must be a table ([turns.usage])`},
		},
		{
			name: "tool_calls not a list",
			src:  "[[turns]]\ntool_calls = \"fs_list\"\n",
			want: []string{`s.toml:2: config_invalid: "turns.tool_calls" must be an array of tables ([[turns.tool_calls]])`},
		},
		{
			name: "token count not an integer",
			src:  "[[turns]]\n[turns.usage]\nprompt_tokens = 1.5\n",
			want: []string{`s.toml:3: config_invalid: "turns.usage.prompt_tokens" must be an integer`},
		},
		{
			name: "nameless tool call",
			src:  "[[turns]]\ntext = \"a\"\n\n[[turns]]\n[[turns.tool_calls]]\nargs = { path = \".\" }\n",
			want: []string{`s.toml:5: config_invalid: turn 2, tool call 1 has no name; add name = "<tool>" to it`},
		},
		{
			name: "repeated id",
			src:  "[[turns]]\n[[turns.tool_calls]]\nid = \"a\"\nname = \"x\"\n[[turns.tool_calls]]\nid = \"a\"\nname = \"y\"\n",
			want: []string{`s.toml:5: config_invalid: turn 1, tool call 2 repeats the id "a"; ids must differ within a turn (or leave id out)`},
		},
		{
			name: "negative usage",
			src:  "[[turns]]\n[turns.usage]\nprompt_tokens = -1\n",
			want: []string{`s.toml:1: config_invalid: turn 1: usage token counts must not be negative`},
		},
		{
			name: "empty script",
			src:  "# nothing yet\n",
			want: []string{`s.toml: config_invalid: the script has no turns; add a [[turns]] table with text = "..." or [[turns.tool_calls]]`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.src), "s.toml")
			if err == nil {
				t.Fatal("no error")
			}
			var got []string
			var list errs.List
			var e *errs.Error
			switch {
			case errors.As(err, &list):
				for _, e := range list {
					got = append(got, e.Error())
				}
			case errors.As(err, &e):
				got = []string{e.Error()}
			default:
				t.Fatalf("%T is not an *errs.Error: %v", err, err)
			}
			for _, msg := range got {
				if !strings.Contains(msg, "config_invalid") {
					t.Errorf("code missing: %s", msg)
				}
			}
			// The list is sorted by position, so compare as sets of lines.
			if !sameSet(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.toml")
	_, err := Load(path)
	if errs.CodeOf(err) != errs.ConfigInvalid || errs.PosOf(err).File != path {
		t.Fatalf("got %v", err)
	}
}

func TestInferInOrderThenExhausted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.toml")
	if err := os.WriteFile(file, []byte(demo), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		model *Model
		where string
	}{
		{"opened from a file", fromFile, file},
		{"built from turns", New(turns), "the script"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m := tc.model
			if m.Remaining() != 2 {
				t.Fatalf("remaining %d", m.Remaining())
			}
			r1, err := m.Infer(ctx, model.Request{})
			if err != nil {
				t.Fatal(err)
			}
			if r1.Text != "Let me look around." || len(r1.ToolCalls) != 2 || r1.ToolCalls[0].ID != "" ||
				r1.ToolCalls[1].ID != "optional-id" || r1.Usage.TotalTokens != 150 {
				t.Errorf("first reply %+v", r1)
			}
			r2, err := m.Infer(ctx, model.Request{})
			if err != nil || r2.Text != "Done." || r2.ToolCalls != nil || r2.Usage != nil {
				t.Errorf("second reply %+v, %v", r2, err)
			}
			_, err = m.Infer(ctx, model.Request{})
			want := "model_failed: scripted model: the script has 2 turns and a 3rd inference was asked for; add a turn to " + tc.where
			if err == nil || err.Error() != want || !errors.Is(err, errs.ModelFailed) {
				t.Errorf("got  %v\nwant %s", err, want)
			}
			if m.Remaining() != 0 {
				t.Errorf("remaining %d", m.Remaining())
			}
		})
	}
}

func TestInferCancelledKeepsTheTurn(t *testing.T) {
	t.Parallel()
	m := New([]Turn{{Text: "a"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Infer(ctx, model.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if m.Remaining() != 1 {
		t.Fatalf("a cancelled inference used a turn")
	}
}

func TestInferNeverSharesArgs(t *testing.T) {
	t.Parallel()
	turns := []Turn{{ToolCalls: []model.ToolCall{{Name: "x", Args: map[string]any{"l": []any{"a"}}}}, Usage: &model.Usage{PromptTokens: 1}}}
	m := New(turns)
	turns[0].ToolCalls[0].Args["l"] = "changed by the caller after New"

	r, err := m.Infer(context.Background(), model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ToolCalls[0].Args["l"].([]any)[0]; got != "a" {
		t.Fatalf("New kept the caller's map: %v", got)
	}
	r.ToolCalls[0].Args["l"].([]any)[0] = "mutated"
	r.ToolCalls[0].Name = "y"
	r.Usage.PromptTokens = 99
	kept := m.turns[0]
	if kept.ToolCalls[0].Args["l"].([]any)[0] != "a" || kept.ToolCalls[0].Name != "x" || kept.Usage.PromptTokens != 1 {
		t.Fatalf("the reply shares memory with the script: %+v", kept)
	}
}

func TestInferConcurrent(t *testing.T) {
	t.Parallel()
	const n = 64
	turns := make([]Turn, n)
	for i := range turns {
		turns[i] = Turn{Text: strconv.Itoa(i)}
	}
	m := New(turns)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	for range n + 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.Infer(context.Background(), model.Request{})
			if err != nil {
				return
			}
			mu.Lock()
			seen[r.Text] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n || m.Remaining() != 0 {
		t.Fatalf("%d distinct replies, %d remaining", len(seen), m.Remaining())
	}
}

func TestOrdinal(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestExhaustedSingular(t *testing.T) {
	t.Parallel()
	m := New([]Turn{{Text: "only"}})
	_, _ = m.Infer(context.Background(), model.Request{})
	_, err := m.Infer(context.Background(), model.Request{})
	if !strings.Contains(err.Error(), "the script has 1 turn and a 2nd inference") {
		t.Fatal(err)
	}
}

// FuzzParse checks that no script makes Parse (or the key scanner) panic or
// hang, and that every error renders.
func FuzzParse(f *testing.F) {
	f.Add(demo)
	f.Add("turns = [{ text = \"a\", tool_calls = [{ name = \"x\", bogus = 1 }] }]")
	f.Add("[[turns]]\ntext = '''\nx\n'''\nfoo.bar = 1\n")
	f.Add("[[turns]]\n\"quoted key\" = 1\n")
	f.Fuzz(func(t *testing.T, src string) {
		_, err := Parse([]byte(src), "f.toml")
		if err != nil {
			_ = err.Error()
		}
		tomlpos.Scan(src)
	})
}

// TestSkipContinuesTheScript: a model made for a resumed run answers with
// the turn after those the run already had, never an earlier one.
func TestSkipContinuesTheScript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := New([]Turn{{Text: "a"}, {Text: "b"}, {Text: "c"}})
	m.Skip(2)
	if r, err := m.Infer(ctx, model.Request{}); err != nil || r.Text != "c" {
		t.Fatalf("after Skip(2): %+v, %v", r, err)
	}
	m.Skip(1) // never back
	if m.Remaining() != 0 {
		t.Fatalf("Skip moved back: remaining %d", m.Remaining())
	}
	m = New([]Turn{{Text: "a"}})
	m.Skip(5)
	if _, err := m.Infer(ctx, model.Request{}); err == nil || !strings.Contains(err.Error(), "a 2nd inference") {
		t.Fatalf("past the end: %v", err)
	}
}
