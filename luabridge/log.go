package luabridge

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"

	lua "github.com/yuin/gopher-lua"
)

// logMax bounds what one print or awaken.log call writes: a longer message
// is cut (saying how many bytes were left out), and fields past the bound
// are replaced by a note.
const logMax = 64 << 10

// logFieldsMax bounds the fields of one awaken.log call.
const logFieldsMax = 64

func (inst *instance) print(L *lua.LState) int {
	top := L.GetTop()
	var b strings.Builder
	for i := 1; i <= top; i++ {
		if i > 1 {
			b.WriteByte('\t')
		}
		s := L.ToStringMeta(L.Get(i)).String()
		if room := logMax - b.Len(); len(s) > room {
			b.WriteString(errs.Clip(s, room))
			if i < top {
				b.WriteString(" (and " + strconv.Itoa(top-i) + " more values)")
			}
			break
		}
		b.WriteString(s)
	}
	inst.p.gen.log.Info(b.String(), "plugin", inst.p.id, "at", inst.where(L).String(), "source", "print")
	return 0
}

func (inst *instance) log(L *lua.LState, level slog.Level) int {
	msg := errs.Clip(L.CheckString(1), logMax)
	attrs := []any{"plugin", inst.p.id, "at", inst.where(L).String()}
	if t, ok := L.Get(2).(*lua.LTable); ok {
		t = viewed(t)
		var keys []string
		omitted := 0
		m := meter{L: L}
		for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
			m.add(1)
			s, ok := k.(lua.LString)
			if !ok {
				continue
			}
			if len(keys) == logFieldsMax {
				omitted++
				continue
			}
			keys = append(keys, string(s))
		}
		sort.Strings(keys)
		room := logMax - len(msg)
		for _, k := range keys {
			c := converter{null: inst.null, maxEntries: 1024, maxBytes: max(room, 0), L: L}
			v, err := c.run(t.RawGetString(k))
			if err != nil {
				v = "(not logged: " + err.Error() + ")"
			}
			room -= c.bytes
			attrs = append(attrs, errs.Clip(k, 256), v)
		}
		if omitted > 0 {
			attrs = append(attrs, "fields_omitted", omitted)
		}
	}
	if inst.call != nil && inst.call.in != nil {
		attrs = append(attrs, "run_id", inst.call.in.Run.ID)
	}
	inst.p.gen.log.Log(context.Background(), level, msg, attrs...)
	return 0
}
