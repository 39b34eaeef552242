package value

import (
	"math"
	"strings"
	"testing"
)

func TestEncodedSizeMatchesAppendJSON(t *testing.T) {
	for _, v := range []any{
		nil, Null{}, true, false, 0.0, 1.0, math.Copysign(0, -1), -1.0, 9.0, 10.0, -10.0, 123456789.0, 1e15 - 1, 1e15, -1e15,
		1e21, 1e-7, 0.5, -123.456, 5e-324, math.MaxFloat64,
		"", "a", "héllo", "\"\\\b\f\n\r\t", "\x00\x1f\x7f", "<>&", "\u2028\u2029", "a\xffb\xc3", "😀",
		[]any{}, []any(nil), []any{1.0, "x", nil, []any{}},
		map[string]any{}, map[string]any(nil), map[string]any{"a": 1.0, "b<": []any{true, map[string]any{"\n": "x"}}},
	} {
		want, err := AppendJSON(nil, v)
		if err != nil {
			t.Fatalf("AppendJSON(%#v): %v", v, err)
		}
		got, err := EncodedSize(v, math.MaxInt)
		if err != nil || got != len(want) {
			t.Errorf("EncodedSize(%#v) = %d, %v; want %d (%s)", v, got, err, len(want), want)
		}
		if f, ok := v.(float64); ok && NumberSize(f) != len(want) {
			t.Errorf("NumberSize(%v) = %d; want %d (%s)", f, NumberSize(f), len(want), want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if n := NumberSize(f); n != 0 {
			t.Errorf("NumberSize(%v) = %d, want 0 (AppendJSON refuses it)", f, n)
		}
	}
}

func TestEncodedSizeStopsPastTheLimit(t *testing.T) {
	// A table shared 40 levels deep encodes to 2^40 copies of its leaf: the
	// walk must stop just past the limit, not encode it.
	v := any("xxxxxxxx")
	for range 40 {
		v = []any{v, v}
	}
	n, err := EncodedSize(v, 1000)
	if err != nil || n <= 1000 || n > 1100 {
		t.Fatalf("EncodedSize = %d, %v; want just over 1000", n, err)
	}
	big := map[string]any{"a": strings.Repeat("x", 5000), "b": strings.Repeat("y", 5000)}
	if n, _ := EncodedSize(big, 100); n <= 100 || n > 5100 {
		t.Fatalf("EncodedSize of a map past the limit = %d", n)
	}
}

func TestEncodedSizeRefusesWhatCannotBeEncoded(t *testing.T) {
	deep := any(1.0)
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), []any{math.Inf(-1)}, 3, map[string]string{}, deep} {
		if _, err := EncodedSize(v, math.MaxInt); err == nil {
			t.Errorf("EncodedSize(%T) succeeded, want an error", v)
		}
	}
}

func FuzzEncodedSize(f *testing.F) {
	f.Add("", 0.0)
	f.Add("a\xffb<>&\u2028\x00\x7f", 1e21)
	f.Add("\xed\xa0\x80\xe2\x82", 1e-7)
	f.Add("😀\\\"\b\f", -123.456)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		v := map[string]any{s: []any{s, x, map[string]any{"k": s, s + "2": x}}}
		want, werr := AppendJSON(nil, v)
		got, err := EncodedSize(v, math.MaxInt)
		if (err == nil) != (werr == nil) {
			t.Fatalf("EncodedSize error %v, AppendJSON error %v", err, werr)
		}
		if err == nil && got != len(want) {
			t.Fatalf("EncodedSize = %d, len(AppendJSON) = %d (%s)", got, len(want), want)
		}
	})
}
