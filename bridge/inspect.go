package bridge

// EachResponse calls fn for every JSON-RPC response in msg, one message or
// a batch as the bridge writes them to clients (valid, compact JSON), with
// the response's id byte for byte and whether it is an error. Requests and
// notifications are skipped. It lets an observer on the far side of a
// transport (httpapi's metrics) tell which request an outgoing message
// answers, without decoding the message.
func EachResponse(msg []byte, fn func(id []byte, isError bool)) {
	i := skipSpace(msg, 0)
	if i >= len(msg) {
		return
	}
	if msg[i] == '[' {
		for i = skipSpace(msg, i+1); i < len(msg) && msg[i] != ']'; {
			end := skipValue(msg, i)
			if end <= i {
				return // not valid JSON after all: stop rather than spin
			}
			EachResponse(msg[i:end], fn)
			i = skipSpace(msg, end)
			if i < len(msg) && msg[i] == ',' {
				i = skipSpace(msg, i+1)
			}
		}
		return
	}
	f, err := scanFields(msg)
	if err != nil || f.method.ok() || !f.id.ok() || f.result.ok() == f.error.ok() {
		return
	}
	fn(f.id.of(msg), f.error.ok())
}
