package gate

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// MaxTicketTimeout bounds how long a ticket may wait for a decision: days,
// never months.
const MaxTicketTimeout = 30 * 24 * time.Hour

// ticketFields are the fields a ticket is written with.
var ticketFields = map[string]bool{"id": true, "action": true, "message": true, "parameters": true,
	"response_schema": true, "options": true, "resume_mode": true, "timeout": true, "on_timeout": true}

// TicketFields lists the fields a ticket is written with, in no order.
func TicketFields() []string { return slices.Collect(maps.Keys(ticketFields)) }

// TicketFromValue reads a ticket as a plugin writes it (awaken.suspend's
// table, awaken.pending's data): {id?, action?, message?, parameters?,
// response_schema?, options?, resume_mode?, timeout?, on_timeout?}. A nil
// value is the empty ticket; a value that is not an object, an unknown
// field or a field of the wrong type is an error that names it. The
// runtime fills what is left empty.
func TicketFromValue(v any) (Ticket, error) {
	var tk Ticket
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		return tk, fmt.Errorf("a ticket is an object of fields (id, action, message, ...), not %T", v)
	}
	for k := range m {
		if !ticketFields[k] {
			return tk, fmt.Errorf("unknown ticket field %q (fields: id, action, message, parameters, response_schema, options, resume_mode, timeout, on_timeout)", k)
		}
	}
	str := func(k string) (string, error) {
		switch x := m[k].(type) {
		case nil:
			return "", nil
		case string:
			return x, nil
		}
		return "", fmt.Errorf("ticket field %s must be a string", k)
	}
	var err error
	if tk.ID, err = str("id"); err != nil {
		return tk, err
	}
	if tk.Action, err = str("action"); err != nil {
		return tk, err
	}
	if tk.Message, err = str("message"); err != nil {
		return tk, err
	}
	mode, err := str("resume_mode")
	if err != nil {
		return tk, err
	}
	tk.ResumeMode = ResumeMode(mode)
	if !tk.ResumeMode.Valid() {
		return tk, fmt.Errorf("resume_mode %q is not one of replay, use_decision_as_result, pass_decision_to_tool", mode)
	}
	if to, ok := m["timeout"]; ok {
		if tk.Timeout, err = ticketTimeout(to); err != nil {
			return tk, err
		}
	}
	if tk.OnTimeout, err = str("on_timeout"); err != nil {
		return tk, err
	}
	switch tk.OnTimeout {
	case "", OnTimeoutCancel, OnTimeoutResume:
	default:
		return tk, fmt.Errorf("on_timeout %q is not \"cancel\" or \"resume\"", tk.OnTimeout)
	}
	tk.Parameters = m["parameters"]
	tk.ResponseSchema = m["response_schema"]
	switch o := m["options"].(type) {
	case nil:
	case []any:
		for _, x := range o {
			s, ok := x.(string)
			if !ok {
				return tk, fmt.Errorf("ticket options must be strings")
			}
			tk.Options = append(tk.Options, s)
		}
	default:
		return tk, fmt.Errorf("ticket options must be a list of strings")
	}
	return tk, nil
}

// ticketTimeout reads a ticket's timeout: a duration such as "10m".
func ticketTimeout(v any) (time.Duration, error) {
	s, ok := v.(string)
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d <= 0 {
		return 0, fmt.Errorf("ticket timeout must be a positive duration such as \"10m\" or \"24h\", got %v", v)
	}
	if d > MaxTicketTimeout {
		return 0, fmt.Errorf("ticket timeout %s is more than %s", s, MaxTicketTimeout)
	}
	return d, nil
}
