package aggregate

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// A client pages through a merged list with cursors of the aggregate's
// own. A cursor says where the client is in the merged order (the last
// exposed name it was given), not where any server is in its own list:
// every page reads every server's list anew, so no server's cursor ever
// reaches a client, and none can be forged into another server's. It also
// carries the caching hints of the first page, which 2026-07-28 wants the
// same on every page. It is MACed (HMAC-SHA256) together with the method
// and the scope it was given for, so a cursor that was altered, made up,
// or given for another list or principal is refused (-32602). It holds
// nothing the client was not given already, so it is signed, not sealed.

// cursor is what a cursor carries.
type cursor struct {
	After   string `json:"a"` // the last key of the page before
	TTL     int64  `json:"t"` // ttlMs of the first page
	Private bool   `json:"p"` // cacheScope of the first page was "private"
}

// cursorKey MACs cursors.
type cursorKey []byte

// newCursorKey is key, or a random one if key is empty.
func newCursorKey(key []byte) cursorKey {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return cursorKey(append([]byte(nil), key...))
}

// cursorMACSize is the bytes of the MAC a cursor keeps: 128 bits.
const cursorMACSize = 16

func (k cursorKey) sum(payload, method, scope string) []byte {
	m := hmac.New(sha256.New, k)
	// Lengths first, so no two (method, scope, payload) run together
	// into the same bytes.
	for _, s := range []string{"mcp-bridge aggregate cursor 1", method, scope, payload} {
		var n [4]byte
		n[0], n[1], n[2], n[3] = byte(len(s)>>24), byte(len(s)>>16), byte(len(s)>>8), byte(len(s))
		m.Write(n[:])
		m.Write([]byte(s))
	}
	return m.Sum(nil)[:cursorMACSize]
}

// seal is the cursor c as a client gets it, for method and scope.
func (k cursorKey) seal(c cursor, method, scope string) string {
	b, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(k.sum(payload, method, scope))
}

var errBadCursor = errors.New("invalid cursor")

// open is the cursor s, if this key sealed it for method and scope.
func (k cursorKey) open(s, method, scope string) (cursor, error) {
	payload, mac64, ok := strings.Cut(s, ".")
	mac, err := base64.RawURLEncoding.DecodeString(mac64)
	if !ok || err != nil || !hmac.Equal(mac, k.sum(payload, method, scope)) {
		return cursor{}, errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var c cursor
	if err != nil || json.Unmarshal(b, &c) != nil || c.After == "" {
		return cursor{}, errBadCursor
	}
	return c, nil
}
