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

// wrapAD is the additional data of a sealed state of kind: its own
// prefix, so that a sealed blob cannot be passed off under another
// replica's name, or as another kind.
func (b *Bridge) wrapAD(kind string) []byte { return []byte("mb1." + b.cfg.ReplicaID + "." + kind) }

// seal seals s as a requestState of kind, with a fresh single-use id.
func (b *Bridge) seal(kind string, s sealedState) string {
	_, _ = rand.Read(s.ID[:])
	plain, _ := json.Marshal(s)
	nonce := make([]byte, b.stateAEAD.NonceSize(), b.stateAEAD.NonceSize()+len(plain)+b.stateAEAD.Overhead())
	_, _ = rand.Read(nonce)
	sealed := b.stateAEAD.Seal(nonce, nonce, plain, b.wrapAD(kind))
	return "mb1." + b.cfg.ReplicaID + "." + kind + "." + base64.RawURLEncoding.EncodeToString(sealed)
}

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
	return b.seal(wrapKind, s)
}

// Why a wrapped requestState is refused, as the client is told.
const (
	whyStateNotOurs = "requestState was not issued by this bridge: a retry sends back the requestState of the input_required result it answers, unchanged"
	whyStateGone    = "requestState is invalid, expired or already used; send the request again without it"
	whyStateForeign = "requestState does not belong to this request (principal, method, target and arguments must be those of the request it answers)"
)

// open opens a sealed requestState of kind and checks it against what it
// must be bound to, its expiry and its single use, which it spends.
func (b *Bridge) open(kind, rs, owner, method, target string, args [32]byte) (s sealedState, why string) {
	rest, ok := strings.CutPrefix(rs, "mb1.")
	if !ok {
		return s, whyStateNotOurs
	}
	replica, rest, _ := strings.Cut(rest, ".")
	if replica != b.cfg.ReplicaID {
		return s, "requestState was issued by the bridge replica " + quoteVersion(replica) + " and this is " + quoteVersion(b.cfg.ReplicaID) + "; route retries by the replica named in requestState"
	}
	k, enc, _ := strings.Cut(rest, ".")
	sealed, err := base64.RawURLEncoding.DecodeString(enc)
	ns := b.stateAEAD.NonceSize()
	if k != kind || err != nil || len(sealed) < ns {
		return s, whyStateGone
	}
	plain, err := b.stateAEAD.Open(nil, sealed[:ns], sealed[ns:], b.wrapAD(kind))
	if err != nil || json.Unmarshal(plain, &s) != nil {
		return sealedState{}, whyStateGone
	}
	now := b.cfg.Now()
	if now.UnixNano() >= s.Expires {
		return sealedState{}, whyStateGone
	}
	if s.Owner != owner || s.Method != method || s.Target != target || s.Args != args {
		return sealedState{}, whyStateForeign
	}
	if !b.spendState(s.ID, s.Expires, now) {
		return sealedState{}, whyStateGone
	}
	return s, ""
}

// unwrapState opens a wrapped requestState and checks it against this
// call (its principal, method, target and arguments), its expiry and its
// single use, which it spends. It returns the child's state, or why not.
func (mc *ModernCall) unwrapState(rs string) (state string, why string) {
	s, why := mc.b.open(wrapKind, rs, mc.owner.Key, mc.method, mc.target, mc.argsDigest())
	if why != "" {
		return "", why
	}
	mc.exchange = s.Exchange
	return s.State, ""
}

// approvalKind marks the requestState of a question of the bridge's own
// (a human's approval of a call, asked in an input_required result) among
// its handles.
const approvalKind = "a"

// Binding is what a requestState of the bridge's own question is bound
// to, as every requestState the bridge issues is: the principal (its
// Owner.Key), the method, the target (the tool) and the arguments, by
// the SHA-256 of their canonical JSON.
type Binding struct {
	Owner, Method, Target string
	Arguments             []byte
}

// SealQuestion seals the id of a question of the bridge's own (an
// approval's) into a requestState bound to b, single use, that expires at
// expires or after --input-ttl, whichever comes first.
func (b *Bridge) SealQuestion(bind Binding, id string, expires time.Time) string {
	if ttl := b.cfg.Now().Add(b.cfg.InputTTL); ttl.Before(expires) {
		expires = ttl
	}
	return b.seal(approvalKind, sealedState{Owner: bind.Owner, Method: bind.Method, Target: bind.Target,
		Args: digestArgs(bind.Arguments), State: id, Expires: expires.UnixNano()})
}

// IsQuestionState reports whether a requestState claims to be one of a
// question of the bridge's own (SealQuestion's), of any replica: a retry
// that brings one answers the bridge, not the server.
func IsQuestionState(rs string) bool {
	rest, ok := strings.CutPrefix(rs, "mb1.")
	if !ok {
		return false
	}
	_, rest, _ = strings.Cut(rest, ".")
	return strings.HasPrefix(rest, approvalKind+".")
}

// OpenQuestion opens a requestState of SealQuestion's, checks it against
// bind, its expiry and its single use (which it spends), and returns the
// question's id, or why not, as the client is told.
func (b *Bridge) OpenQuestion(rs string, bind Binding) (id, why string) {
	s, why := b.open(approvalKind, rs, bind.Owner, bind.Method, bind.Target, digestArgs(bind.Arguments))
	return s.State, why
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
