package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// FuzzSchema compiles a spec and runs a value through it. Nothing may
// panic, every error must render, and whatever Validate accepts, Conform
// must accept too, without touching its input and with a result that
// validates.
func FuzzSchema(f *testing.F) {
	f.Add(`{"type":"string","minLength":1,"maxLength":3}`, `"ab"`)
	f.Add(`{"type":["integer","null"],"minimum":0,"maximum":10,"default":3}`, `3.5`)
	f.Add(`{"type":"object","required":["tool"],"additionalProperties":false,
		"properties":{"tool":{"type":"string"},"mode":{"enum":["eager","deferred"],"default":"eager"}}}`, `{"tool":"x","colour":1}`)
	f.Add(`{"type":"object","properties":{"rules":{"type":"array","items":{"type":"object",
		"properties":{"tool":{"type":"string"},"allow":{"type":"boolean","default":false}}}}}}`, `{"rules":[{"tool":"a"},[],{"tool":3}]}`)
	f.Add(`{"type":"object","default":[],"properties":{"limits":{"type":"object","default":{},
		"properties":{"calls":{"type":"integer","default":10}}}}}`, `[]`)
	f.Add(`{"type":"array","items":{"type":"array"}}`, `[{},[],{}]`)
	f.Add(`{"additionalProperties":{"type":"object","properties":{"on":{"default":true}}}}`, `{"odd name":{},"b":[]}`)
	f.Add(`{"enum":[{},[1,{"a":[]}]],"type":["object","array"]}`, `[1,{"a":{}}]`)
	f.Add(`{"requird":["x"]}`, `{}`)
	f.Add(`{"type":"strng"}`, `null`)
	f.Add(`[]`, `{"a":[1e308,-0,""]}`)
	f.Fuzz(func(t *testing.T, specJSON, valueJSON string) {
		var spec, v any
		if json.Unmarshal([]byte(specJSON), &spec) != nil || json.Unmarshal([]byte(valueJSON), &v) != nil {
			return
		}
		s, err := Compile(spec)
		if err != nil {
			_ = err.Error()
			if s != nil {
				t.Fatal("Compile returned a schema with its error")
			}
			return
		}
		// The schema's JSON form compiles back to the same schema.
		js := s.JSON()
		s2, err := Compile(js)
		if err != nil {
			t.Fatalf("Compile(JSON()) of %s: %v", specJSON, err)
		}
		if !reflect.DeepEqual(s2.JSON(), js) {
			t.Fatalf("JSON round trip changed %s into %s", value.String(js), value.String(s2.JSON()))
		}
		if d, ok := s.Default(); ok {
			if err := s.Validate(d); err != nil {
				t.Fatalf("the default does not validate: %v", err)
			}
		}

		before := value.Clone(v)
		verr := s.Validate(v)
		out, cerr := s.Conform(v)
		if !reflect.DeepEqual(v, before) {
			t.Fatalf("Conform mutated its input")
		}
		if verr != nil {
			_ = verr.Error()
			if !errors.Is(verr, errs.SchemaViolation) {
				t.Fatalf("Validate error is not a schema_violation: %v", verr)
			}
			if cerr == nil || cerr.Error() != verr.Error() {
				t.Fatalf("Validate said %v but Conform said %v", verr, cerr)
			}
			return
		}
		if cerr != nil {
			t.Fatalf("Validate accepted %s but Conform said %v", valueJSON, cerr)
		}
		if err := s.Validate(out); err != nil {
			t.Fatalf("Conform(%s) = %s, which does not validate: %v", valueJSON, value.String(out), err)
		}
		again, err := s.Conform(out)
		if err != nil || !reflect.DeepEqual(again, out) {
			t.Fatalf("Conform is not idempotent: %s then %s (%v)", value.String(out), value.String(again), err)
		}
		if err := s2.Validate(v); err != nil {
			t.Fatalf("the schema compiled from JSON() refuses what the original accepts: %v", err)
		}
	})
}
