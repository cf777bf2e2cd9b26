package httpapi

import (
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// limits are the per-principal caps: live sessions, POSTs being served at
// once, open streams, and a request rate. Each refusal is 429 with
// Retry-After. They are explicit counters rather than chi's Throttle,
// which would count every long-lived stream against the cap for its whole
// life (docs/decisions.md, "Per-principal limits").
type limits struct {
	maxSessions int
	maxInFlight int
	maxStreams  int
	rate        rate.Limit
	burst       int
	now         func() time.Time

	mu      sync.Mutex
	m       map[string]*principalState // by auth.Principal.Key
	sweepAt int                        // sweep idle entries when the map reaches this size
	held    map[bridge.Conn]func()     // session slots, released when the session ends
}

type principalState struct {
	sessions int
	inFlight int
	streams  int
	lim      *rate.Limiter // nil without a rate limit
}

func newLimits(o Options) *limits {
	if o.MaxSessionsPerPrincipal <= 0 && o.MaxInFlightPerPrincipal <= 0 && o.MaxStreamsPerPrincipal <= 0 && o.RateLimit <= 0 {
		return nil
	}
	l := &limits{
		maxSessions: o.MaxSessionsPerPrincipal,
		maxInFlight: o.MaxInFlightPerPrincipal,
		maxStreams:  o.MaxStreamsPerPrincipal,
		now:         o.Now,
		m:           make(map[string]*principalState),
		sweepAt:     1024,
		held:        make(map[bridge.Conn]func()),
	}
	if o.RateLimit > 0 {
		l.rate = rate.Limit(o.RateLimit)
		l.burst = o.RateBurst
		if l.burst <= 0 {
			l.burst = max(1, int(math.Ceil(o.RateLimit)))
		}
	}
	return l
}

func tooMany(msg string, retry time.Duration) *httpError {
	secs := max(1, int(math.Ceil(retry.Seconds())))
	return &httpError{status: http.StatusTooManyRequests, code: bridge.CodeInvalidRequest, msg: "Too Many Requests: " + msg,
		header: http.Header{"Retry-After": {strconv.Itoa(secs)}}}
}

// stateLocked returns the principal's entry, creating it; now and then it
// forgets principals with nothing live and a full bucket, which are the
// same as new ones, so the map holds only principals seen recently.
func (l *limits) stateLocked(key string, now time.Time) *principalState {
	if s := l.m[key]; s != nil {
		return s
	}
	if len(l.m) >= l.sweepAt {
		for k, s := range l.m {
			if s.sessions == 0 && s.inFlight == 0 && s.streams == 0 && (s.lim == nil || s.lim.TokensAt(now) >= float64(l.burst)) {
				delete(l.m, k)
			}
		}
		l.sweepAt = max(1024, 2*len(l.m))
	}
	s := &principalState{}
	if l.rate > 0 {
		s.lim = rate.NewLimiter(l.rate, l.burst)
	}
	l.m[key] = s
	return s
}

// allow takes one request from the principal's rate.
func (l *limits) allow(p auth.Principal) error {
	if l == nil || l.rate <= 0 {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stateLocked(p.Key(), now)
	if r := s.lim.ReserveN(now, 1); r.OK() {
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now) // refused: the token goes back
			return tooMany("over the request rate limit of this principal (--rate-limit)", d)
		}
		return nil
	}
	return tooMany("over the request rate limit of this principal (--rate-limit)", time.Second)
}

// enter counts a POST being served; call the returned func when it is.
func (l *limits) enter(p auth.Principal) (func(), error) {
	if l == nil || l.maxInFlight <= 0 {
		return func() {}, nil
	}
	key := p.Key()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stateLocked(key, l.now())
	if s.inFlight >= l.maxInFlight {
		return nil, tooMany("too many requests in flight for this principal (--max-inflight-per-principal)", time.Second)
	}
	s.inFlight++
	return func() {
		l.mu.Lock()
		s.inFlight--
		l.mu.Unlock()
	}, nil
}

// openStream counts a stream the principal holds open: a session's GET
// stream, a legacy HTTP+SSE stream, a 2026-07-28 listen, a 2026-07-28
// answer sent as SSE. Call the returned func when the stream ends; it
// gives the place back once, however often it is called.
func (l *limits) openStream(p auth.Principal) (close func(), err error) {
	if l == nil || l.maxStreams <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stateLocked(p.Key(), l.now())
	if s.streams >= l.maxStreams {
		return nil, tooMany("this principal has too many open streams (--max-streams-per-principal); close one first", time.Second)
	}
	s.streams++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			s.streams--
			l.mu.Unlock()
		})
	}, nil
}

// reserveSession takes a session slot before the session exists, so two
// initializes at once cannot both slip under the cap. The returned release
// gives it back.
func (l *limits) reserveSession(p auth.Principal) (release func(), err error) {
	if l == nil || l.maxSessions <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stateLocked(p.Key(), l.now())
	if s.sessions >= l.maxSessions {
		return nil, tooMany("this principal has too many sessions (--max-sessions-per-principal); end one with DELETE", time.Second)
	}
	s.sessions++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			s.sessions--
			l.mu.Unlock()
		})
	}, nil
}

// holdSession gives the slot back when the session ends, however it ends
// (DELETE, idle expiry, its child's exit, the bridge's Close). The
// goroutine lives exactly as long as the session.
func (l *limits) holdSession(sess bridge.Conn, release func()) {
	if l == nil || l.maxSessions <= 0 {
		return
	}
	l.mu.Lock()
	l.held[sess] = release
	l.mu.Unlock()
	go func() {
		<-sess.Done()
		l.ended(sess)
	}()
}

// ended gives back the slot of a session that has ended, at once: a
// DELETE calls it before answering, so the client that deleted a session
// can start another straight away.
func (l *limits) ended(sess bridge.Conn) {
	if l == nil || l.maxSessions <= 0 {
		return
	}
	l.mu.Lock()
	release := l.held[sess]
	delete(l.held, sess)
	l.mu.Unlock()
	if release != nil {
		release()
	}
}

// middleware applies the rate limit to every request, and the in-flight
// cap to POSTs, of the principal auth put in the request's context.
func (l *limits) middleware(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := auth.FromContext(r.Context())
			refuse := func(err error) {
				he := toHTTPError(err)
				log.Debug("request refused: over a per-principal limit", "method", r.Method, "principal", p.String(), "msg", he.msg)
				writeError(w, he)
			}
			if err := l.allow(p); err != nil {
				refuse(err)
				return
			}
			if r.Method == http.MethodPost {
				leave, err := l.enter(p)
				if err != nil {
					refuse(err)
					return
				}
				defer leave()
			}
			next.ServeHTTP(w, r)
		})
	}
}
