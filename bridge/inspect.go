package bridge

import "strconv"

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
