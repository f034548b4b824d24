package tool

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// A tools change made before the 2026-07-28 listen stream is acknowledged
// sends no notification; the acknowledgement itself makes the session
// list the tools again (TestRemoteListChanged failed now and then without
// it: the test added a tool in that gap).
func TestListenAcknowledgedRefreshesTools(t *testing.T) {
	for _, method := range []mcp.MCPMethod{mcp.MethodNotificationSubscriptionsAcknowledged, mcp.MethodNotificationToolsListChanged} {
		s := newSession(t.Context())
		s.onNotification(mcp.JSONRPCNotification{Notification: mcp.Notification{Method: string(method)}})
		select {
		case <-s.refresh:
		default:
			t.Errorf("%s did not ask for a refresh", method)
		}
	}
}
