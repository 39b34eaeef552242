package run

import (
	"fmt"
	"reflect"

	"github.com/awaken-lua/awaken-lua/model"
)

// StepTool is one of the step's tools in a checkpoint: the host tool at
// index Host of Checkpoint.Tools, or Spec. A step mostly offers host
// tools, whose schemas the checkpoint holds once already.
type StepTool struct {
	Host *int            `json:"host,omitempty"`
	Spec *model.ToolSpec `json:"spec,omitempty"`
}

// StepToolList is the step's tools of a Delta; nil Tools: the tools that
// Offered names, as in a checkpoint without Checkpoint.StepTools.
type StepToolList struct {
	Tools []StepTool `json:"tools"`
}

// derivedStepTools is what a checkpoint without StepTools restores as the
// step's tools: the host tool of each offered name, or the name alone.
// For a checkpoint written before step tools were kept this is the best
// that can be recovered (the names are known, the specs only of host
// tools); a newer one leaves StepTools out only when this gives exactly
// the step's tools (encodeStepTools checks).
func derivedStepTools(offered []string, host []model.ToolSpec) []model.ToolSpec {
	if offered == nil {
		return nil
	}
	byName := hostIndex(host)
	out := make([]model.ToolSpec, len(offered))
	for i, name := range offered {
		out[i] = model.ToolSpec{Name: name}
		if j, ok := byName[name]; ok {
			out[i] = host[j]
		}
	}
	return out
}

// hostIndex maps each host tool's name to its first index.
func hostIndex(host []model.ToolSpec) map[string]int {
	m := make(map[string]int, len(host))
	for j := len(host) - 1; j >= 0; j-- {
		m[host[j].Name] = j
	}
	return m
}

// encodeStepTools is the checkpoint's StepTools for the session's step
// tools: nil when derivedStepTools gives them back (most steps: the host's
// tools, filtered), else each tool as a host tool's index when it is one,
// so a schema is never saved twice.
func encodeStepTools(tools []model.ToolSpec, offered []string, host []model.ToolSpec) []StepTool {
	byName := hostIndex(host)
	if sameTools(tools, offered, host, byName) {
		return nil
	}
	if len(tools) == 0 {
		return nil // offered are their names: none, which derives none
	}
	out := make([]StepTool, len(tools))
	for i := range tools {
		if j, ok := byName[tools[i].Name]; ok && sameTool(&tools[i], &host[j]) {
			out[i].Host = &j
			continue
		}
		out[i].Spec = &tools[i]
	}
	return out
}

// sameTools reports whether derivedStepTools(offered, host) is tools,
// without building the list: a map lookup and pointer compares per tool
// when the step's tools are the host's own values (the usual case).
func sameTools(tools []model.ToolSpec, offered []string, host []model.ToolSpec, byName map[string]int) bool {
	if len(tools) != len(offered) {
		return false
	}
	for i := range tools {
		if tools[i].Name != offered[i] {
			return false
		}
		d := model.ToolSpec{Name: offered[i]}
		if j, ok := byName[offered[i]]; ok {
			d = host[j]
		}
		if !sameTool(&tools[i], &d) {
			return false
		}
	}
	return true
}

// sameTool reports whether a and b are the same tool spec: the same
// schema map (a host tool passed on), or one equal to it (a host tool
// that went through a Lua transform).
func sameTool(a, b *model.ToolSpec) bool {
	if a.Name != b.Name || a.Description != b.Description || (a.Parameters == nil) != (b.Parameters == nil) {
		return false
	}
	return sameValue(a.Parameters, b.Parameters) || reflect.DeepEqual(a.Parameters, b.Parameters)
}

// decodeStepTools is the step's tools a checkpoint holds; the specs are
// the checkpoint's own (the caller gives it a copy).
func decodeStepTools(cp *Checkpoint) ([]model.ToolSpec, error) {
	if len(cp.StepTools) == 0 {
		return derivedStepTools(cp.Offered, cp.Tools), nil
	}
	out := make([]model.ToolSpec, len(cp.StepTools))
	for i, t := range cp.StepTools {
		switch {
		case t.Host != nil && *t.Host >= 0 && *t.Host < len(cp.Tools):
			out[i] = cp.Tools[*t.Host]
		case t.Host == nil && t.Spec != nil:
			out[i] = *t.Spec
		default:
			return nil, fmt.Errorf("run %q: step tool %d is neither a spec nor one of the %d host tools", cp.RunID, i, len(cp.Tools))
		}
	}
	return out, nil
}

func cloneStepTools(ts []StepTool) []StepTool {
	if ts == nil {
		return nil
	}
	out := make([]StepTool, len(ts))
	for i, t := range ts {
		if t.Host != nil {
			h := *t.Host
			out[i].Host = &h
		}
		if t.Spec != nil {
			s := *t.Spec
			s.Parameters = cloneMap(t.Spec.Parameters)
			out[i].Spec = &s
		}
	}
	return out
}
