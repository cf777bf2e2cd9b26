package bridge

import (
	"bytes"
	"strconv"
)

// A Reply is what an observer on the far side of a transport (httpapi's
// metrics and audit log) reads of a response the bridge writes to a
// client: which request it answers, and how.
type Reply struct {
	ID    []byte // the request's id, byte for byte as the client sent it
	Error bool   // an error response
	Code  int    // the error's code (0 for a result)
}

// ReplyOf reads one message as the bridge writes them to clients (valid,
// compact JSON), without decoding it: ok is false for requests,
// notifications and anything that is not a JSON-RPC response.
func ReplyOf(msg []byte) (r Reply, ok bool) {
	f, err := scanFields(msg)
	if err != nil || f.method.ok() || !f.id.ok() || f.result.ok() == f.error.ok() {
		return Reply{}, false
	}
	r.ID = f.id.of(msg)
	if e := f.error.of(msg); e != nil {
		r.Error = true
		if e[0] == '{' {
			c := member(e, "code").of(e)
			r.Code, _ = strconv.Atoi(string(c))
		}
	}
	return r, true
}

// FilterTools returns msg, a tools/list response, without the tools of
// its result that keep refuses (by name), every other byte as it was; a
// tool that is no object with a string name is left out too. A response
// whose result has a "tools" array is a tools/list result: no other MCP
// result has one at the top. Any other message, or one that keeps every
// tool, is returned as it is. It reads the message without decoding it:
// the tools' names only.
func FilterTools(msg []byte, keep func(name string) bool) []byte {
	if !bytes.Contains(msg, []byte(`"tools"`)) {
		return msg
	}
	f, err := scanFields(msg)
	res := f.result.of(msg)
	if err != nil || f.method.ok() || res == nil || res[0] != '{' {
		return msg
	}
	ts := member(res, "tools")
	tools := ts.of(res)
	if tools == nil || tools[0] != '[' {
		return msg
	}
	kept := []byte{'['}
	dropped := false
	_ = eachElement(tools, func(tool []byte) error {
		var name string
		if tool[0] != '{' || unquote(member(tool, "name").of(tool), &name) != nil || !keep(name) {
			dropped = true
			return nil
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, tool...)
		return nil
	})
	if !dropped {
		return msg
	}
	return splice(msg, f.result, splice(res, ts, append(kept, ']')))
}
