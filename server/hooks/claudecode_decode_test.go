package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// decodeCCInput decodes what json.Unmarshal into a ccInput decodes, to the
// same fields.
func TestDecodeCCInput(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       ccInput
		err        string // "" for none
	}{
		{"pre tool use", `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash",
			"tool_input":{"command":"ls","description":"list","timeout":5,"run_in_background":false,"x":[1,{"y":null}]},
			"tool_use_id":"toolu_1","cwd":"/p","transcript_path":"/t.jsonl","permission_mode":"default"}`,
			ccInput{SessionID: "s1", HookEventName: "PreToolUse", ToolName: "Bash", ToolUseID: "toolu_1", Cwd: "/p",
				TranscriptPath: "/t.jsonl", PermissionMode: "default",
				ToolInput: map[string]any{"command": "ls", "description": "list", "timeout": 5.0, "run_in_background": false,
					"x": []any{1.0, map[string]any{"y": nil}}}}, ""},
		{"post tool use failure", `{"hook_event_name":"PostToolUseFailure","tool_response":"out","error":{"code":1},"prompt":"p","source":"startup","reason":"clear","stop_hook_active":true,"agent_id":"a","last_assistant_message":"done"}`,
			ccInput{HookEventName: "PostToolUseFailure", ToolResponse: "out", Error: map[string]any{"code": 1.0}, Prompt: "p",
				Source: "startup", Reason: "clear", StopHookActive: true, AgentID: "a", LastAssistantMessage: "done"}, ""},
		{"unknown fields and nulls", `{"session_id":null,"model":{"id":"opus"},"tool_input":null,"stop_hook_active":null}`, ccInput{}, ""},
		{"escapes", `{"session_id":"a\"b\u00e9\n","tool_input":{"command":"echo \"\\\\\""}}`,
			ccInput{SessionID: "a\"b\u00e9\n", ToolInput: map[string]any{"command": `echo "\\"`}}, ""},
		{"last duplicate wins", `{"session_id":"a","session_id":"b"}`, ccInput{SessionID: "b"}, ""},
		{"case-insensitive name", `{"Session_ID":"a","TOOL_NAME":"Bash"}`, ccInput{SessionID: "a", ToolName: "Bash"}, ""},
		{"last of two spellings wins", `{"tool_name":"Bash","Tool_Name":"Read"}`, ccInput{ToolName: "Read"}, ""},
		{"wrong-typed duplicate", `{"session_id":1,"session_id":"a"}`, ccInput{}, "session_id must be a string, not a JSON integer"},
		{"top-level null", `null`, ccInput{}, ""},
		{"huge numbers in unknown fields", `{"model":1e400,"x":{"y":[-1e309]},"cwd":"/"}`, ccInput{Cwd: "/"}, ""},
		{"huge number in tool_input", `{"tool_input":{"n":1e400}}`, ccInput{}, "out of float64 range"},
		{"whitespace", " \n{\"cwd\":\"/\"}\t", ccInput{Cwd: "/"}, ""},
		{"wrong-typed string", `{"session_id":5}`, ccInput{}, "session_id must be a string, not a JSON integer"},
		{"wrong-typed folded name", `{"Tool_Name":["Bash"]}`, ccInput{}, "tool_name must be a string, not a JSON array"},
		{"wrong-typed bool", `{"stop_hook_active":"yes"}`, ccInput{}, "stop_hook_active must be true or false, not a JSON string"},
		{"array", `[]`, ccInput{}, "the input must be a JSON object, not a JSON array"},
		{"truncated", `{"session_id": `, ccInput{}, "unexpected end"},
		{"trailing data", `{} {}`, ccInput{}, "after top-level value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got ccInput
			err := decodeCCInput([]byte(tc.body), &got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				var std ccInput
				if json.Unmarshal([]byte(tc.body), &std) == nil {
					t.Fatalf("json.Unmarshal accepts what decodeCCInput refuses")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			var std ccInput
			if err := json.Unmarshal([]byte(tc.body), &std); err != nil || !reflect.DeepEqual(got, std) {
				t.Fatalf("json.Unmarshal: %v, %+v", err, std)
			}
		})
	}
}

// ccFields lists every JSON field of ccInput, and only those: a field
// added to the struct and not to the list would never be decoded.
func TestCCFieldsCoverCCInput(t *testing.T) {
	var want []string
	typ := reflect.TypeFor[ccInput]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			want = append(want, name)
		}
	}
	var got []string
	for _, f := range ccFields {
		got = append(got, f.name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("ccFields %q, ccInput's JSON fields %q", got, want)
	}
}

// FuzzDecodeCCInput checks decodeCCInput against json.Unmarshal: both
// accept the same inputs and decode them to equal fields.
func FuzzDecodeCCInput(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "agents", "claude-code", "*.json"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"Session_ID":"a","stop_hook_active":true,"tool_input":{"a":[1,"\ud800"]}}`))
	f.Add([]byte(`{"session_id":1}`))
	f.Add([]byte(`{"model":1e400,"tool_input":{"n":-1e309}}`))
	f.Add([]byte(`{"session_id":1,"session_id":"a"}`))
	f.Add([]byte(`{"tool_name":"a","TOOL_NAME":"b"}`))
	f.Add([]byte("{\"cwd\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var got, std ccInput
		err := decodeCCInput(body, &got)
		stdErr := json.Unmarshal(body, &std)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("decodeCCInput: %v; json.Unmarshal: %v", err, stdErr)
		}
		if err == nil && !reflect.DeepEqual(got, std) {
			t.Fatalf("decodeCCInput %+v\njson.Unmarshal %+v", got, std)
		}
	})
}
