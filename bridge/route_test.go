package bridge

import "testing"

// TestRouteOf holds routing to docs/decisions.md ("Routing without a hint
// from the child", "Shared-mode routing"): a response by its id, progress
// by its token, a request or log message to the one request in flight,
// anything else to the child's clients as its role says; never a guess
// between clients.
func TestRouteOf(t *testing.T) {
	const (
		listChanged = "notifications/tools/list_changed"
		sampling    = "sampling/createMessage"
		other       = "notifications/whatever"
	)
	for _, tc := range []struct {
		name string
		in   routeIn
		want route
	}{
		// Responses, whatever else is true.
		{"response", routeIn{kind: Response, role: roleOwn}, routeAnswer},
		{"response, shared", routeIn{kind: Response, role: roleShared, one: true}, routeAnswer},
		{"response, lease", routeIn{kind: Response, role: roleLease, busy: true}, routeAnswer},

		// Progress, by its token, in every role.
		{"progress", routeIn{kind: Notification, method: methodProgress, role: roleOwn}, routeProgress},
		{"progress, shared, several in flight", routeIn{kind: Notification, method: methodProgress, role: roleShared, busy: true}, routeProgress},
		{"progress, modern child: never a listen's", routeIn{kind: Notification, method: methodProgress, role: roleShared, era: eraModern, named: true}, routeProgress},

		// A request or log message with exactly one request in flight
		// relates to it.
		{"request, one in flight", routeIn{kind: Request, method: sampling, role: roleShared, one: true, busy: true}, routeOnly},
		{"log, one in flight", routeIn{kind: Notification, method: methodLogMessage, role: roleShared, one: true, busy: true}, routeOnly},
		{"request, one in flight, own child", routeIn{kind: Request, method: sampling, role: roleOwn, one: true, listeners: 1}, routeOnly},
		{"request, one in flight, lease", routeIn{kind: Request, method: sampling, role: roleLease, one: true, busy: true}, routeOnly},
		{"list change, one in flight: not the request's", routeIn{kind: Notification, method: listChanged, role: roleShared, one: true}, routeAll},

		// A child of one session: everything else is the session's.
		{"request, none in flight, own child", routeIn{kind: Request, method: sampling, role: roleOwn, listeners: 1}, routeAll},
		{"log, several in flight, own child", routeIn{kind: Notification, method: methodLogMessage, role: roleOwn, listeners: 1}, routeAll},
		{"other notification, own child", routeIn{kind: Notification, method: other, role: roleOwn, listeners: 1}, routeAll},
		// ...and a request no client can answer is refused at once.
		{"request, waiting child", routeIn{kind: Request, method: sampling, role: roleOwn}, routeRefuse},
		{"request, idle lease", routeIn{kind: Request, method: "roots/list", role: roleLease}, routeRefuse},
		{"log, idle lease", routeIn{kind: Notification, method: methodLogMessage, role: roleLease}, routeAll},

		// A leased child's changes go to its pool's listens, but only
		// while it serves a call.
		{"lease list change, busy", routeIn{kind: Notification, method: listChanged, role: roleLease, busy: true}, routePublish},
		{"lease resource update, busy", routeIn{kind: Notification, method: methodResourceUpdated, role: roleLease, busy: true}, routePublish},
		{"lease list change, idle", routeIn{kind: Notification, method: listChanged, role: roleLease}, routeDrop},

		// A modern child names the listen a notification is for.
		{"modern child, named", routeIn{kind: Notification, method: listChanged, role: roleShared, era: eraModern, named: true}, routeNamed},
		{"modern child, not named", routeIn{kind: Notification, method: listChanged, role: roleShared, era: eraModern}, routeAll},
		{"legacy child, named: not read", routeIn{kind: Notification, method: listChanged, role: roleShared, era: eraLegacy, named: true}, routeAll},

		// A shared child: never a guess between clients.
		{"request, none in flight, shared", routeIn{kind: Request, method: sampling, role: roleShared, listeners: 3}, routeAmbiguous},
		{"request, several in flight, identity", routeIn{kind: Request, method: "elicitation/create", role: roleIdentity, busy: true}, routeAmbiguous},
		{"request, modern base", routeIn{kind: Request, method: "roots/list", role: roleModernBase}, routeAmbiguous},
		{"list change, shared", routeIn{kind: Notification, method: listChanged, role: roleShared, busy: true}, routeAll},
		{"log, several in flight, shared", routeIn{kind: Notification, method: methodLogMessage, role: roleShared, busy: true}, routeAll},
		{"resource update, shared", routeIn{kind: Notification, method: methodResourceUpdated, role: roleShared}, routeSubscribers},
		{"resource update, identity", routeIn{kind: Notification, method: methodResourceUpdated, role: roleIdentity}, routeSubscribers},
		{"other notification, shared", routeIn{kind: Notification, method: other, role: roleShared}, routeStray},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := routeOf(tc.in); got != tc.want {
				t.Errorf("routeOf(%+v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
