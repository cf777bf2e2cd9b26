package bridge

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/internal/canonjson"
)

// A modern child's requestState is its own (it may encode the whole state
// of the call, signed with a key only that process has), so the bridge
// relays it; but the child, behind stdio, cannot know who asked, and would
// take the same state from anyone, for any tool. So the bridge seals it
// (AES-256-GCM, with a key of this process) together with what binds it:
// the principal, the method, the target, the SHA-256 of the arguments'
// canonical JSON, an expiry (--input-ttl) and a random id that makes it
// single use. The client gets "mb1.<replica>.c.<sealed, base64url>"; a
// retry must bring it back unchanged, as the same principal, for the same
// request, once, in time. A state that is not wrapped at all is refused:
// the client has no other way to have a state for this child than from
// the bridge. Why sealed rather than signed: docs/decisions.md.
//
// A retry of an exchange with a modern child may be answered by another
// input_required result: the exchange id sealed in the state is carried
// into the next one, so the audit log links every round of the call.

// wrapKind marks a wrapped child state among the bridge's handles.
const wrapKind = "c"

// sealedState is what a wrapped requestState carries.
type sealedState struct {
	ID       [16]byte `json:"i"` // single use
	Exchange string   `json:"x"` // the exchange, for the audit log
	Expires  int64    `json:"e"` // Unix nanoseconds
	Owner    string   `json:"o"`
	Method   string   `json:"m"`
	Target   string   `json:"t"`
	Args     [32]byte `json:"a"`
	State    string   `json:"s"` // the child's own
}

// newStateAEAD makes the cipher that seals the child states this process
// relays.
func newStateAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// wrapAD is the additional data of a wrapper: its own prefix, so that a
// sealed blob cannot be passed off under another replica's name.
func (b *Bridge) wrapAD() []byte { return []byte("mb1." + b.cfg.ReplicaID + "." + wrapKind) }

// wrapState seals a modern child's requestState for the client, bound to
// this call.
func (mc *ModernCall) wrapState(state string) string {
	b := mc.b
	s := sealedState{Owner: mc.owner.Key, Method: mc.method, Target: mc.target, Args: mc.argsDigest(),
		State: state, Expires: b.cfg.Now().Add(b.cfg.InputTTL).UnixNano()}
	if mc.exchange == "" {
		mc.exchange = newExchangeID()
	}
	s.Exchange = mc.exchange
	_, _ = rand.Read(s.ID[:])
	plain, _ := json.Marshal(s)
	nonce := make([]byte, b.stateAEAD.NonceSize(), b.stateAEAD.NonceSize()+len(plain)+b.stateAEAD.Overhead())
	_, _ = rand.Read(nonce)
	sealed := b.stateAEAD.Seal(nonce, nonce, plain, b.wrapAD())
	return "mb1." + b.cfg.ReplicaID + "." + wrapKind + "." + base64.RawURLEncoding.EncodeToString(sealed)
}

// Why a wrapped requestState is refused, as the client is told.
const (
	whyStateNotOurs = "requestState was not issued by this bridge: a retry sends back the requestState of the input_required result it answers, unchanged"
	whyStateGone    = "requestState is invalid, expired or already used; send the request again without it"
	whyStateForeign = "requestState does not belong to this request (principal, method, target and arguments must be those of the request it answers)"
)

// unwrapState opens a wrapped requestState and checks it against this
// call (its principal, method, target and arguments), its expiry and its
// single use, which it spends. It returns the child's state, or why not.
func (mc *ModernCall) unwrapState(rs string) (state string, why string) {
	b := mc.b
	rest, ok := strings.CutPrefix(rs, "mb1.")
	if !ok {
		return "", whyStateNotOurs
	}
	replica, rest, _ := strings.Cut(rest, ".")
	if replica != b.cfg.ReplicaID {
		return "", "requestState was issued by the bridge replica " + quoteVersion(replica) + " and this is " + quoteVersion(b.cfg.ReplicaID) + "; route retries by the replica named in requestState"
	}
	kind, enc, _ := strings.Cut(rest, ".")
	sealed, err := base64.RawURLEncoding.DecodeString(enc)
	ns := b.stateAEAD.NonceSize()
	if kind != wrapKind || err != nil || len(sealed) < ns {
		return "", whyStateGone
	}
	plain, err := b.stateAEAD.Open(nil, sealed[:ns], sealed[ns:], b.wrapAD())
	var s sealedState
	if err != nil || json.Unmarshal(plain, &s) != nil {
		return "", whyStateGone
	}
	now := b.cfg.Now()
	if now.UnixNano() >= s.Expires {
		return "", whyStateGone
	}
	if s.Owner != mc.owner.Key || s.Method != mc.method || s.Target != mc.target || s.Args != mc.argsDigest() {
		return "", whyStateForeign
	}
	if !b.spendState(s.ID, s.Expires, now) {
		return "", whyStateGone
	}
	mc.exchange = s.Exchange
	return s.State, ""
}

// spendState marks a wrapper's id used, reporting false if it was
// already. Ids are kept until their wrapper expires, so the set holds at
// most the wrappers given out within --input-ttl; expired ones are swept
// as the set grows.
func (b *Bridge) spendState(id [16]byte, expires int64, now time.Time) bool {
	b.exMu.Lock()
	defer b.exMu.Unlock()
	if _, used := b.spent[id]; used {
		return false
	}
	if len(b.spent) >= b.spentSweep {
		for k, exp := range b.spent {
			if now.UnixNano() >= exp {
				delete(b.spent, k)
			}
		}
		b.spentSweep = max(1024, 2*len(b.spent))
	}
	b.spent[id] = expires
	return true
}

// relayState rewrites the requestState of a modern child's input_required
// result, wrapped (wrapState).
func (mc *ModernCall) relayState(m *childMsg) *childMsg {
	res := m.f.result.of(m.raw)
	if !bytes.Contains(res, []byte(`"input_required"`)) {
		return m
	}
	rs := member(res, "requestState")
	var state string
	if !rs.ok() || unquote(rs.of(res), &state) != nil {
		return m
	}
	mc.inputRequired = true
	w, _ := json.Marshal(mc.wrapState(state))
	return m.replaced(span{m.f.result.start + rs.start, m.f.result.start + rs.end}, w)
}

// argsDigest is the digest of the call's arguments (digestArgs), made on
// first use: a call that never asks its client for input needs none.
func (mc *ModernCall) argsDigest() [32]byte {
	if !mc.argsDone {
		mc.args, mc.argsDone = digestArgs(mc.argsRaw), true
	}
	return mc.args
}

// digestArgs is the SHA-256 of the arguments' canonical JSON, by the
// rule an approval binds a call's arguments with too (canonjson.Digest).
func digestArgs(args []byte) [32]byte { return canonjson.Digest(args) }

// Exchange names the MRTR exchange the call is a round of ("" for none):
// its first request and every retry, whichever child serves it, have the
// same, for the audit log. Read it once the final message is given.
func (mc *ModernCall) Exchange() string { return mc.exchange }

// InputRequired reports whether the call's answer was an input_required
// result: a round of its exchange, not its end.
func (mc *ModernCall) InputRequired() bool { return mc.inputRequired }

// newExchangeID names an MRTR exchange in the audit log: random, and
// unrelated to its requestState, which is a bearer's credential and stays
// out of logs.
func newExchangeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
