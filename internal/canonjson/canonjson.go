// Package canonjson owns the one rule by which the bridge digests JSON
// arguments: the SHA-256 of their canonical form. A sealed requestState
// (bridge) and an approval (approval) are both bound to a call's arguments
// by it, so a retry matches exactly when its arguments mean the same, and
// both must agree on what "the same" is.
package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
)

// Digest is the SHA-256 of the arguments' canonical JSON: keys sorted (as
// encoding/json writes a map), no white space, strings re-encoded,
// numbers exactly as written. So a retry that sends the same arguments in
// another order or spacing matches, and one whose numbers differ anywhere
// (1 and 1.0, or two integers above 2^53 that a float64 would take for
// one) does not. Bytes that are not one JSON value are digested as they
// are. nil (no arguments) has the digest of nothing. Keys that fold onto
// each other never get here: bridge.ParseBody refuses them.
func Digest(args []byte) [32]byte {
	if args == nil {
		return sha256.Sum256(nil)
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err == nil {
		if canon, err := json.Marshal(v); err == nil {
			args = canon
		}
	}
	return sha256.Sum256(args)
}
