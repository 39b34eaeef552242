package plugin

// A View is what one agent runs: the behavioural parts of its active
// plugins, in hook order (priority, the agent's plugins list, the id).

import (
	"slices"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
)

// All is the view with every plugin active.
func (s *Set) All() *View { return s.all }

// Activate returns the view for an activation filter: the behavioural parts
// of the plugins it names plus those of runtime built-ins. An empty filter
// activates every plugin. An unknown id is config_invalid.
func (s *Set) Activate(filter []string) (*View, error) {
	if len(filter) == 0 {
		return s.all, nil
	}
	on := map[string]bool{}
	var ids []string
	for _, in := range s.infos {
		ids = append(ids, in.ID)
	}
	for _, id := range filter {
		if _, ok := s.byID[id]; !ok {
			return nil, errs.New(errs.ConfigInvalid, "the plugin list names %q, which is not loaded%s; loaded plugins: %s",
				id, errs.DidYouMean(id, ids), strings.Join(ids, ", "))
		}
		on[id] = true
	}
	v := &View{set: s, tools: map[string]ToolEntry{}, filter: append([]string(nil), filter...)}
	keep := func(plugin string) bool {
		if on[plugin] {
			return true
		}
		in := s.infos[s.byID[plugin]]
		return in.Builtin
	}
	a := s.ordered(filter)
	for p := range a.hooks {
		for _, h := range a.hooks[p] {
			if keep(h.Plugin) {
				v.hooks[p] = append(v.hooks[p], h)
			}
		}
	}
	for _, g := range a.gates {
		if keep(g.Plugin) {
			v.gates = append(v.gates, g)
		}
	}
	for _, t := range a.toolList {
		if keep(t.Plugin) {
			v.toolList = append(v.toolList, t)
			v.tools[t.Name] = t
		}
	}
	for _, t := range a.transforms {
		if keep(t.Plugin) {
			v.transforms = append(v.transforms, t)
		}
	}
	for _, t := range a.results {
		if keep(t.Plugin) {
			v.results = append(v.results, t)
		}
	}
	return v, nil
}

// rank returns the indexes of s.infos in hook order for an agent's
// plugins list: priority (higher first; s.infos is sorted so already),
// then the position in filter (plugins it does not name after those it
// names), then the set's order (the plugin id).
func (s *Set) rank(filter []string) []int {
	at := make(map[string]int, len(filter))
	for i, id := range filter {
		at[id] = i
	}
	pos := func(i int) int {
		if r, ok := at[s.infos[i].ID]; ok {
			return r
		}
		return len(filter)
	}
	idx := make([]int, len(s.infos))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if pa, pb := s.infos[a].Priority, s.infos[b].Priority; pa != pb {
			return pb - pa
		}
		return pos(a) - pos(b)
	})
	return idx
}

// ordered returns the view of every plugin in hook order for filter (see
// rank): the set's own view when that order is the set's.
func (s *Set) ordered(filter []string) *View {
	idx := s.rank(filter)
	order := make([]int, len(s.infos)) // index in s.infos -> position
	same := true
	for p, i := range idx {
		order[i] = p
		same = same && p == i
	}
	if same {
		return s.all
	}
	pos := func(plugin string) int { return order[s.byID[plugin]] }
	a := s.all
	v := &View{set: s, tools: a.tools, toolList: a.toolList}
	for p := range a.hooks {
		v.hooks[p] = slices.Clone(a.hooks[p])
		slices.SortStableFunc(v.hooks[p], func(x, y HookEntry) int { return pos(x.Plugin) - pos(y.Plugin) })
	}
	v.gates = slices.Clone(a.gates)
	slices.SortStableFunc(v.gates, func(x, y GateEntry) int { return pos(x.Plugin) - pos(y.Plugin) })
	v.transforms = slices.Clone(a.transforms)
	slices.SortStableFunc(v.transforms, func(x, y TransformEntry) int { return pos(x.Plugin) - pos(y.Plugin) })
	v.results = slices.Clone(a.results)
	slices.SortStableFunc(v.results, func(x, y ResultTransformEntry) int { return pos(x.Plugin) - pos(y.Plugin) })
	return v
}

// View is the behavioural parts active for one agent.
type View struct {
	set        *Set
	filter     []string
	hooks      [phase.Count + 1][]HookEntry
	gates      []GateEntry
	toolList   []ToolEntry
	tools      map[string]ToolEntry
	transforms []TransformEntry
	results    []ResultTransformEntry
}

func (v *View) add(r *Registrar) {
	for _, h := range r.hooks {
		v.hooks[h.phase] = append(v.hooks[h.phase], h.HookEntry)
	}
	v.gates = append(v.gates, r.gates...)
	for _, t := range r.tools {
		if _, dup := v.tools[t.Name]; !dup {
			v.toolList = append(v.toolList, t)
			v.tools[t.Name] = t
		}
	}
	v.transforms = append(v.transforms, r.transforms...)
	v.results = append(v.results, r.results...)
}

// Set returns the set the view belongs to.
func (v *View) Set() *Set { return v.set }

// Hooks lists the active hooks of a phase in hook order.
func (v *View) Hooks(p phase.Phase) []HookEntry {
	if !p.Valid() {
		return nil
	}
	return v.hooks[p]
}

// Gates lists the active gate hooks in hook order.
func (v *View) Gates() []GateEntry { return v.gates }

// Tools lists the active plugin tools in hook order.
func (v *View) Tools() []ToolEntry { return v.toolList }

// Tool finds an active plugin tool.
func (v *View) Tool(name string) (ToolEntry, bool) {
	t, ok := v.tools[name]
	return t, ok
}

// Transforms lists the active request transforms in hook order.
func (v *View) Transforms() []TransformEntry { return v.transforms }

// ResultTransforms lists the active result transforms in hook order.
func (v *View) ResultTransforms() []ResultTransformEntry { return v.results }

// Order lists the view's plugins that are not built-ins in the order
// their hooks run: priority, then the agent's plugins list, then the set's
// order.
func (v *View) Order() []string {
	var out []string
	for _, i := range v.set.rank(v.filter) {
		if in := v.set.infos[i]; !in.Builtin && v.Active(in.ID) {
			out = append(out, in.ID)
		}
	}
	return out
}

// Active reports whether the plugin's behavioural parts are in this view.
func (v *View) Active(plugin string) bool {
	if len(v.filter) == 0 {
		return true
	}
	for _, id := range v.filter {
		if id == plugin {
			return true
		}
	}
	in, ok := v.set.Plugin(plugin)
	return ok && in.Builtin
}
