package scripted

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"

	"github.com/BurntSushi/toml"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/internal/tomlpos"
	"github.com/awaken-lua/awaken-lua/model"
)

// The file shapes. Decoding into typed structs (rather than maps) lets
// toml.MetaData.Undecoded report every key the script format does not know.
type (
	fileScript struct {
		Turns []fileTurn `toml:"turns"`
	}
	fileTurn struct {
		Text      string     `toml:"text"`
		ToolCalls []fileCall `toml:"tool_calls"`
		Usage     *fileUsage `toml:"usage"`
	}
	fileCall struct {
		ID   string `toml:"id"`
		Name string `toml:"name"`
		Args any    `toml:"args"` // any: the decoder silently drops a non-table here
	}
	fileUsage struct {
		PromptTokens     int `toml:"prompt_tokens"`
		CompletionTokens int `toml:"completion_tokens"`
		TotalTokens      int `toml:"total_tokens"`
	}
)

// Known keys per table, for unknown-key hints and "did you mean".
var (
	scriptKeys = []string{"turns"}
	turnKeys   = []string{"text", "tool_calls", "usage"}
	callKeys   = []string{"id", "name", "args"}
	usageKeys  = []string{"prompt_tokens", "completion_tokens", "total_tokens"}
)

// expected says what each key must hold, to turn the decoder's type errors
// ("destination has type string") into advice.
var expected = map[string]string{
	"turns":                         "an array of tables ([[turns]])",
	"turns.text":                    "a string",
	"turns.tool_calls":              "an array of tables ([[turns.tool_calls]])",
	"turns.tool_calls.id":           "a string",
	"turns.tool_calls.name":         "a string",
	"turns.tool_calls.args":         `a table, such as args = { path = "." }`,
	"turns.usage":                   "a table ([turns.usage])",
	"turns.usage.prompt_tokens":     "an integer",
	"turns.usage.completion_tokens": "an integer",
	"turns.usage.total_tokens":      "an integer",
}

// MaxScriptSize bounds a script file: a path that names something else
// (a log, /dev/zero) must fail, not fill memory.
const MaxScriptSize = 64 << 20

// Load reads and parses a script file; errors carry the path.
func Load(path string) ([]Turn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.Wrap(errs.ConfigInvalid, err, "cannot read the model script").At(errs.Pos{File: path})
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptSize+1))
	if err != nil {
		return nil, errs.Wrap(errs.ConfigInvalid, err, "cannot read the model script").At(errs.Pos{File: path})
	}
	if len(data) > MaxScriptSize {
		return nil, errs.New(errs.ConfigInvalid, "cannot read the model script: it is larger than 64 MiB; check that it names the script of turns").At(errs.Pos{File: path})
	}
	return Parse(data, path)
}

// Parse reads a script: [[turns]] with text, tool_calls (name,
// args, optional id) and usage. It is strict, because a typo in a script
// would otherwise silently drop a tool call and the scenario would test
// something else: unknown keys, wrong types, nameless tool calls and an
// empty script are config_invalid errors at filename:line. One problem is
// an *errs.Error; several are an errs.List in file order.
func Parse(data []byte, filename string) ([]Turn, error) {
	var f fileScript
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		return nil, decodeError(err, filename)
	}
	idx := tomlpos.Scan(string(data))
	at := func(line int) errs.Pos { return errs.Pos{File: filename, Line: line} }

	var list errs.List
	var reported []toml.Key
	seen := map[string]int{}
	for _, k := range md.Undecoded() {
		ks := k.String()
		n := seen[ks]
		seen[ks]++
		if isArgs(k) || coveredBy(reported, k) {
			continue
		}
		reported = append(reported, k)
		list.Add(errs.New(errs.ConfigInvalid, "%s", unknownKey(k)).At(at(idx.Line(ks, n))))
	}
	if len(f.Turns) == 0 && len(list) == 0 {
		list.Add(errs.New(errs.ConfigInvalid,
			`the script has no turns; add a [[turns]] table with text = "..." or [[turns.tool_calls]]`).At(at(0)))
	}

	turns := make([]Turn, len(f.Turns))
	argsSeen := 0 // args definitions so far, to find each one's line
	for i, ft := range f.Turns {
		t := Turn{Text: ft.Text}
		ids := map[string]bool{}
		for j, fc := range ft.ToolCalls {
			pos := at(callLine(idx, i, j))
			argsLine := 0
			if fc.Args != nil {
				argsLine = idx.Line("turns.tool_calls.args", argsSeen)
				argsSeen++
			}
			if fc.Name == "" {
				list.Add(errs.New(errs.ConfigInvalid,
					`turn %d, tool call %d has no name; add name = "<tool>" to it`, i+1, j+1).At(pos))
				continue
			}
			if fc.ID != "" {
				if ids[fc.ID] {
					list.Add(errs.New(errs.ConfigInvalid,
						"turn %d, tool call %d repeats the id %q; ids must differ within a turn (or leave id out)",
						i+1, j+1, fc.ID).At(pos))
				}
				ids[fc.ID] = true
			}
			args := map[string]any{}
			if fc.Args != nil {
				m, ok := fc.Args.(map[string]any)
				if !ok {
					list.Add(errs.New(errs.ConfigInvalid, `"turns.tool_calls.args" must be %s`,
						expected["turns.tool_calls.args"]).At(at(argsLine)))
					continue
				}
				n, err := value.Normalize(m)
				if err != nil {
					list.Add(errs.Wrap(errs.ConfigInvalid, err,
						"turn %d, tool call %d (%s): args are not plain values", i+1, j+1, fc.Name).At(at(argsLine)))
					continue
				}
				args = n.(map[string]any)
			}
			t.ToolCalls = append(t.ToolCalls, model.ToolCall{ID: fc.ID, Name: fc.Name, Args: args})
		}
		if u := ft.Usage; u != nil {
			if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
				list.Add(errs.New(errs.ConfigInvalid,
					"turn %d: usage token counts must not be negative", i+1).At(at(turnLine(idx, i))))
			}
			total := u.TotalTokens
			if total == 0 {
				total = u.PromptTokens + u.CompletionTokens
			}
			t.Usage = &model.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: total}
		}
		turns[i] = t
	}
	list.Sort()
	if err := list.Err(); err != nil {
		return nil, err
	}
	return turns, nil
}

// isArgs reports keys inside a tool call's args, which are free-form.
func isArgs(k toml.Key) bool {
	return len(k) > 3 && k[0] == "turns" && k[1] == "tool_calls" && k[2] == "args"
}

// coveredBy reports whether a parent of k was already reported, so an
// unknown table is one error, not one per key inside it.
func coveredBy(reported []toml.Key, k toml.Key) bool {
	for _, r := range reported {
		if len(r) < len(k) && slicesEqual(r, k[:len(r)]) {
			return true
		}
	}
	return false
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func unknownKey(k toml.Key) string {
	var known []string
	var what string
	switch toml.Key(k[:len(k)-1]).String() {
	case "":
		known, what = scriptKeys, "a script has only [[turns]]"
	case "turns":
		known, what = turnKeys, "a turn takes text, tool_calls and usage"
	case "turns.tool_calls":
		known, what = callKeys, "a tool call takes id, name and args"
	case "turns.usage":
		known, what = usageKeys, "usage takes prompt_tokens, completion_tokens and total_tokens"
	default:
		return "unknown key " + strconv.Quote(k.String())
	}
	return "unknown key " + strconv.Quote(k.String()) + errs.DidYouMean(k[len(k)-1], known) + "; " + what
}

// typeErr matches the decoder's type errors, which are plain errors with
// the line and key in the text.
var typeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "(.*)"\): (.*)$`)

func decodeError(err error, filename string) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return errs.New(errs.ConfigInvalid, "%s", pe.Message).
			At(errs.Pos{File: filename, Line: pe.Position.Line, Col: pe.Position.Col})
	}
	if m := typeErr.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg := m[2] + ": " + m[3]
		if want, ok := expected[m[2]]; ok {
			msg = strconv.Quote(m[2]) + " must be " + want
		}
		return errs.New(errs.ConfigInvalid, "%s", msg).At(errs.Pos{File: filename, Line: line})
	}
	return errs.Wrap(errs.ConfigInvalid, err, "cannot decode the model script").At(errs.Pos{File: filename})
}
