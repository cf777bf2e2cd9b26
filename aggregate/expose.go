package aggregate

import (
	"bytes"
	"encoding/json"
)

// What a server says that names its own resources is rewritten to the
// aggregate's URIs, so a client can read what a tool links to or a
// notification names: the resource links and embedded resources of a
// tool's result or a prompt's messages, the contents of a read, the URI
// of resources/updated. Everything else of those messages is kept byte
// for byte. Pure functions of the names and the message.

// exposeResult is the result of server's answer to method as the client
// sees it.
func exposeResult(n *Names, server, method string, res []byte) ([]byte, error) {
	if !bytes.Contains(res, []byte(`"uri"`)) {
		return res, nil // most results name no resource: not scanned
	}
	switch method {
	case "tools/call":
		return eachItem(res, "content", func(block []byte) ([]byte, error) { return exposeContent(n, server, block) })
	case "prompts/get":
		return eachItem(res, "messages", func(m []byte) ([]byte, error) {
			s, ok, err := member(m, "content")
			if err != nil || !ok {
				return m, err
			}
			c, err := exposeContent(n, server, s.of(m))
			if err != nil {
				return nil, err
			}
			return splice(m, s, c), nil
		})
	case "resources/read":
		return eachItem(res, "contents", func(c []byte) ([]byte, error) { return exposeMemberURI(n, server, c, path{"uri"}) })
	}
	return res, nil
}

// exposeContent is a content block with the URI of a resource link or
// an embedded resource exposed.
func exposeContent(n *Names, server string, block []byte) ([]byte, error) {
	t, ok, err := member(block, "type")
	if err != nil || !ok {
		return block, err
	}
	switch typ, _ := stringValue(t.of(block)); typ {
	case "resource_link":
		return exposeMemberURI(n, server, block, path{"uri"})
	case "resource":
		return exposeMemberURI(n, server, block, path{"resource", "uri"})
	}
	return block, nil
}

// exposeMemberURI is obj with the string URI at p exposed.
func exposeMemberURI(n *Names, server string, obj []byte, p path) ([]byte, error) {
	raw, ok, err := p.find(obj)
	if err != nil || !ok {
		return obj, err
	}
	uri, isString := stringValue(raw)
	if !isString {
		return obj, nil
	}
	return p.replaceAt(obj, quote(n.ExposeURI(server, uri)))
}

// eachItem is obj with each element of its array member key replaced by
// fn's; obj as it is when it has no such array.
func eachItem(obj []byte, key string, fn func([]byte) ([]byte, error)) ([]byte, error) {
	s, ok, err := member(obj, key)
	if err != nil || !ok {
		return obj, err
	}
	var items []json.RawMessage
	if json.Unmarshal(s.of(obj), &items) != nil {
		return obj, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		out := []byte(it)
		if len(bytes.TrimSpace(it)) > 0 && bytes.TrimSpace(it)[0] == '{' {
			if out, err = fn(it); err != nil {
				return nil, err
			}
		}
		b.Write(out)
	}
	b.WriteByte(']')
	return splice(obj, s, b.Bytes()), nil
}

// listChanged are the notifications that say a list changed.
var listChanged = map[string]Changes{
	"notifications/tools/list_changed":     ToolsChanged,
	"notifications/prompts/list_changed":   PromptsChanged,
	"notifications/resources/list_changed": ResourcesChanged,
}

// exposeNotification is a server's notification as the client sees it,
// or, for a list_changed, the lists it says changed (and no message: the
// aggregate announces changes itself, coalesced).
func exposeNotification(n *Names, server, method string, msg []byte) ([]byte, Changes, error) {
	if ch, ok := listChanged[method]; ok {
		return nil, ch, nil
	}
	switch method {
	case "notifications/resources/updated":
		out, err := exposeMemberURI(n, server, msg, path{"params", "uri"})
		return out, 0, err
	case "notifications/message":
		// The log line says which server wrote it: its logger is the
		// server's name, or the server's name and its own logger.
		logger := server
		raw, ok, err := path{"params", "logger"}.find(msg)
		if err != nil {
			return nil, 0, err
		}
		if own, isString := stringValue(raw); ok && isString && own != "" {
			logger = server + "/" + own
		}
		s, ok, err := path{"params"}.at(msg)
		if err != nil || !ok {
			return msg, 0, err
		}
		params, err := setMember(s.of(msg), "logger", quote(logger))
		if err != nil {
			return nil, 0, err
		}
		return splice(msg, s, params), 0, nil
	}
	return msg, 0, nil
}
