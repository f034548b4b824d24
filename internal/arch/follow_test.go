package arch

import (
	"go/ast"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// protocolPackages are the packages that answer a protocol's clients
// with a turn's events: each follows the turn through relay.Follow.
var protocolPackages = []string{"openai", "aisdk", "agui", "a2a", "mcpserve", "server"}

// followExempt are the functions of protocol packages that read the
// broker themselves, by "package/file.go Func" (a method by its name),
// with why none of them is a client's stream that Follow could serve.
var followExempt = map[string]string{
	// A2A push notifications: a background deliverer POSTs to webhooks
	// from a cursor it keeps in the KV store, over every conversation:
	// no client, no stream, no heartbeat.
	"a2a/push.go Start":  "the push deliverer places its first cursor at the log's head",
	"a2a/push.go follow": "the push deliverer reads every conversation's events for webhooks",
	// agentik's WebSocket: one goroutine serves every subscription of a
	// connection over one shared wake (broker.SubscribeWake), and
	// frames them into one socket with its own flow control: not one
	// subscription onto one stream, which is what Follow is.
	"server/ws.go subscribe": "a WebSocket subscription shares its connection's wakeup",
	"server/ws.go turn":      "the WebSocket's loop reads its subscriptions in turn",
	"server/ws.go packMore":  "the WebSocket packs what is ready into one frame",
}

// brokerReceiver matches the receiver of a call on the broker (h.broker,
// h.cfg.Broker, s.broker: every protocol names it so).
var brokerReceiver = regexp.MustCompile(`(?i)broker$`)

// subscriptionReads are the methods of a broker subscription that a loop
// over it calls (a protocol package calls no other method of these names).
var subscriptionReads = map[string]bool{"Next": true, "TryNext": true, "Ready": true}

// TestProtocolsFollow: a protocol package follows a turn through
// relay.Follow (docs/ARCHITECTURE.md "Following a turn"): it subscribes
// through relay, never calls the broker's Subscribe, and runs no loop of
// its own over a broker subscription (Next, TryNext, Ready), except where
// followExempt says why not. A stale exemption fails too.
func TestProtocolsFollow(t *testing.T) {
	used := map[string]bool{}
	for _, pkg := range protocolPackages {
		files := centreFiles(t, pkg)
		if len(files) == 0 {
			t.Fatalf("no files in internal/%s", pkg)
		}
		for name, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				where := pkg + "/" + name + " " + fn.Name.Name
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					m := sel.Sel.Name
					onBroker := (m == "Subscribe" || m == "SubscribeReady" || m == "SubscribeWake") && brokerReceiver.MatchString(lastName(sel.X))
					if !onBroker && !subscriptionReads[m] {
						return true
					}
					if _, ok := followExempt[where]; ok {
						used[where] = true
						return true
					}
					if onBroker {
						t.Errorf("internal/%s calls the broker's %s: subscribe through relay.Subscribe and follow with relay.Follow", where, m)
					} else {
						t.Errorf("internal/%s reads a subscription itself (%s): follow it with relay.Follow", where, m)
					}
					return true
				})
			}
		}
	}
	var stale []string
	for k := range followExempt {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("exempt from following through relay but reading no subscription any more (drop them from followExempt): %s", strings.Join(stale, ", "))
	}
}

// lastName is the last identifier of a receiver expression: h.cfg.Broker
// is Broker.
func lastName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}
