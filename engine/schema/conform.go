package schema

import (
	"maps"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Conform validates v, then returns it with the defaults of absent object
// properties filled in (at any depth, inside lists too) and Lua's ambiguous
// {} turned into the kind the schema expects: an empty []any where only an
// object fits becomes a map, an empty map where only a list fits becomes a
// []any. It never mutates v: changed containers are copied, and when
// nothing changes v itself comes back without allocating. On a violation it
// returns nil and the error Validate would.
func (s *Schema) Conform(v any) (any, error) {
	if err := s.Validate(v); err != nil {
		return nil, err
	}
	out, _ := s.conform(v)
	return out, nil
}

// conform assumes v is valid and reports whether it made a new value.
func (s *Schema) conform(v any) (any, bool) {
	if s == nil || !s.mayChange {
		return v, false
	}
	switch x := v.(type) {
	case []any:
		if len(x) == 0 && s.types != 0 && s.types&tArray == 0 {
			return s.conformObject(nil, true)
		}
		if s.items == nil || !s.items.mayChange {
			return v, false
		}
		var out []any
		for i, e := range x {
			if n, changed := s.items.conform(e); changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = n
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case map[string]any:
		if len(x) == 0 && s.types != 0 && s.types&tObject == 0 {
			return []any{}, true
		}
		return s.conformObject(x, false)
	}
	return v, false
}

// conformObject copies m on the first change only. fresh says m stands for
// Lua's {} given as a list, so the result is new whatever happens.
func (s *Schema) conformObject(m map[string]any, fresh bool) (any, bool) {
	var out map[string]any
	if fresh {
		out = map[string]any{}
	}
	set := func(k string, v any) {
		if out == nil {
			out = make(map[string]any, len(m)+1)
			maps.Copy(out, m)
		}
		out[k] = v
	}
	for i := range s.props {
		p := &s.props[i]
		x, ok := m[p.name]
		if !ok {
			if p.declared && p.schema.has&hasDefault != 0 {
				set(p.name, value.Clone(p.schema.def))
			}
			continue
		}
		if n, changed := p.schema.conform(x); changed {
			set(p.name, n)
		}
	}
	if s.addlSch != nil && s.addlSch.mayChange {
		for k, x := range m {
			if s.find(k) >= 0 {
				continue
			}
			if n, changed := s.addlSch.conform(x); changed {
				set(k, n)
			}
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}
