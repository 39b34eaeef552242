package run

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/awaken-lua/awaken-lua/model"
)

// ToolMessage is the tool message the model sees for a call's result.
func ToolMessage(call model.ToolCall, r model.ToolResult) model.Message {
	return model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: ResultText(r)}
}

// ResultText renders a result as text: success data as is when it is a
// string and as JSON otherwise; an error as "error: <message>".
func ResultText(r model.ToolResult) string {
	data := ""
	switch d := r.Data.(type) {
	case nil:
	case string:
		data = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			data = fmt.Sprint(d)
		} else {
			data = string(b)
		}
	}
	switch r.Status {
	case model.StatusError:
		if data != "" && r.Message != "" {
			return "error: " + r.Message + "\n" + data
		}
		if r.Message != "" {
			return "error: " + r.Message
		}
		return "error: " + data
	case model.StatusPending:
		return "pending: " + r.Message
	}
	if data == "" {
		return r.Message
	}
	return data
}

func newRandomID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
