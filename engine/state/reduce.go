package state

import (
	"fmt"
	"math"
	"sort"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// ReduceFunc combines the current value (the default when the key is absent)
// with an update. It must not mutate either argument.
type ReduceFunc func(current, update any) (any, error)

var builtinReducers = map[string]ReduceFunc{
	"":        Replace,
	"replace": Replace,
	"add":     Add,
	"append":  Append,
	"merge":   MergeFields,
	"union":   Union,
}

// ReducerNames lists the built-in reducers.
func ReducerNames() []string {
	var out []string
	for n := range builtinReducers {
		if n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Replace makes the update the new value.
func Replace(_, update any) (any, error) { return update, nil }

// Add adds numbers; an absent current value counts as 0.
func Add(current, update any) (any, error) {
	c, ok := current.(float64)
	if current == nil {
		c, ok = 0, true
	}
	if !ok {
		return nil, fmt.Errorf("reducer add: the current value is %s, not a number", value.TypeName(current))
	}
	u, ok := update.(float64)
	if !ok {
		return nil, fmt.Errorf("reducer add: the update is %s, not a number", value.TypeName(update))
	}
	s := c + u
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return nil, fmt.Errorf("reducer add: %v + %v is not a finite number", c, u)
	}
	return s, nil
}

func asList(op string, current any) ([]any, error) {
	switch c := current.(type) {
	case nil:
		return nil, nil
	case []any:
		return c, nil
	case map[string]any:
		if len(c) == 0 { // an empty Lua table
			return nil, nil
		}
	}
	return nil, fmt.Errorf("reducer %s: the current value is %s, not a list", op, value.TypeName(current))
}

// items treats a list update as its items and anything else as one item.
func items(update any) []any {
	switch u := update.(type) {
	case []any:
		return u
	case map[string]any:
		if len(u) == 0 {
			return nil
		}
	}
	return []any{update}
}

// Append adds one item, or every item of a list, to the end of a list.
func Append(current, update any) (any, error) {
	c, err := asList("append", current)
	if err != nil {
		return nil, err
	}
	add := items(update)
	out := make([]any, 0, len(c)+len(add))
	out = append(out, c...)
	return append(out, add...), nil
}

// Union adds the items that are not yet in the list, keeping the order of
// first appearance.
func Union(current, update any) (any, error) {
	c, err := asList("union", current)
	if err != nil {
		return nil, err
	}
	out := append([]any(nil), c...)
outer:
	for _, it := range items(update) {
		for _, have := range out {
			if value.Equal(have, it) {
				continue outer
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// MergeFields merges the update's fields into the current table, shallowly;
// a field set to value.Null is removed.
func MergeFields(current, update any) (any, error) {
	var c map[string]any
	switch x := current.(type) {
	case nil:
	case map[string]any:
		c = x
	case []any:
		if len(x) != 0 {
			return nil, fmt.Errorf("reducer merge: the current value is a list, not a table")
		}
	default:
		return nil, fmt.Errorf("reducer merge: the current value is %s, not a table", value.TypeName(current))
	}
	var u map[string]any
	switch x := update.(type) {
	case map[string]any:
		u = x
	case []any:
		if len(x) != 0 {
			return nil, fmt.Errorf("reducer merge: the update is a list, not a table")
		}
	default:
		return nil, fmt.Errorf("reducer merge: the update is %s, not a table", value.TypeName(update))
	}
	out := make(map[string]any, len(c)+len(u))
	for k, v := range c {
		out[k] = v
	}
	for k, v := range u {
		if _, del := v.(value.Null); del {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out, nil
}

// guarded runs a plugin's own reducer so that a panic in it is the
// commit's error, as any reducer's error is (the phase fails and the run
// ends, naming the key), not a crash of the process serving the run.
func guarded(f ReduceFunc) ReduceFunc {
	return func(current, update any) (v any, err error) {
		defer func() {
			if r := recover(); r != nil {
				v, err = nil, fmt.Errorf("its reducer panicked: %v", r)
			}
		}()
		return f(current, update)
	}
}
